"""Hand-made Claude Code transcript lines, in the shapes Claude Code 2.1 writes, for tests."""

from __future__ import annotations

import json
from typing import Any

SID = "0b3c6f0e-1111-4222-8333-944445555666"
CWD = "/home/u/proj"


def rec(kind: str, uuid: str, parent: str | None, content: Any = None, **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": SID, "cwd": CWD}
    record["timestamp"] = extra.pop("timestamp", f"2026-01-01T00:00:{len(uuid):02d}Z")
    if content is not None:
        record["message"] = {"role": kind, "content": content}
    record.update(extra)
    return record


def prompt(uuid: str, parent: str | None, text: str, **extra: Any) -> dict[str, Any]:
    return rec("user", uuid, parent, text, **extra)


def say(uuid: str, parent: str, text: str, **extra: Any) -> dict[str, Any]:
    return rec("assistant", uuid, parent, [{"type": "text", "text": text}], **extra)


def use(uuid: str, parent: str, call: str, name: str = "Read") -> dict[str, Any]:
    return rec("assistant", uuid, parent, [{"type": "tool_use", "id": call, "name": name, "input": {}}])


def result(uuid: str, parent: str, call: str, error: bool = False) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call, "content": "x", "is_error": error}
    return rec("user", uuid, parent, [block])


def jsonl(*records: dict[str, Any] | bytes) -> bytes:
    return b"".join(r if isinstance(r, bytes) else json.dumps(r).encode() + b"\n" for r in records)
