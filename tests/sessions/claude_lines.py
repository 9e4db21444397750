"""Hand-made Claude Code transcript lines, in the shapes Claude Code 2.1 writes, for tests."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from remem.daemon.sessions.formats.claude_code import Transcript, grow, listed_transcript, read_transcript

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


def side(record: dict[str, Any], second: int | None = None) -> dict[str, Any]:
    """`record` as Claude Code 1.0 wrote a Task subagent's lines into its parent's file."""
    stamp = {} if second is None else {"timestamp": f"2026-01-01T00:00:{second:02d}Z"}
    return {**record, "isSidechain": True, "version": "1.0.24", "userType": "external", **stamp}


def inline_subagents() -> list[dict[str, Any]]:
    """A 1.0 session that ran two Task subagents: each subagent's lines (a chain of its own,
    rooted at null) sit inline between the parent's Task call and its result."""
    return [
        prompt("u1", None, "survey the repo"),
        use("a1", "u1", "task-1", name="Task"),
        side(prompt("s1", None, "list the modules"), 10),
        side(use("s2", "s1", "side-call", name="Glob"), 11),
        side(result("s3", "s2", "side-call"), 12),
        side(say("s4", "s3", "three modules"), 13),
        result("r1", "a1", "task-1"),
        say("a2", "r1", "the repo has three modules"),
        prompt("u2", "a2", "and the tests?"),
        use("a3", "u2", "task-2", name="Task"),
        side(prompt("t1", None, "find the tests"), 20),
        side(say("t2", "t1", "tests live in tests/"), 21),
        result("r2", "a3", "task-2"),
        say("a4", "r2", "tests are in tests/"),
    ]


def listed_as_read(data: bytes, name: str) -> Transcript:
    """`read_transcript(data, name)`, once asserted to say all a listing's read says: the same
    transcript, the active conversation's turns only counted, also when the listing took the
    rest of the file on from its read of any first part (at each line's end and middle)."""
    full, (listed, _) = read_transcript(data, name), listed_transcript(data, name)
    assert listed.turns == () and listed == replace(full, turns=())
    assert full.turn_count == len(full.turns)
    ends = [at + 1 for at, byte in enumerate(data) if byte == ord("\n")]
    for cut in sorted({*ends, *((a + b) // 2 for a, b in zip([0, *ends], ends, strict=False))}):
        assert continued(data, name, cut) == listed, f"went on from byte {cut}"
    return full


def continued(data: bytes, name: str, cut: int) -> Transcript:
    """The listing of `data` after a listing of `data[:cut]`: grown from it, when it kept one
    and can take the rest on."""
    _, grown = listed_transcript(data[:cut], name)
    taken = None if grown is None else grow(grown, data[grown.size :])
    return listed_transcript(data, name)[0] if taken is None else taken
