"""Builders for records and change batches used across the memory tests."""

from __future__ import annotations

from remem.daemon.protocol.memory import DeleteChange, PutChange, Record


def rec(
    name: str, body: str = "Why it matters.\n", type_: str = "project", description: str | None = None
) -> Record:
    return Record(name=name, description=description or f"About {name}", type=type_, content=body)


def put(name: str, body: str = "Why it matters.\n", type_: str = "project") -> PutChange:
    return PutChange(action="put", record=rec(name, body, type_))


def delete(name: str) -> DeleteChange:
    return DeleteChange(action="delete", name=name)
