"""Hand-made Codex rollout lines, in the shapes Codex 0.16x writes, for tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from remem.daemon.sessions.formats.codex import Rollout, listed_rollout, read_rollout

TID = "019c0000-0000-7000-8000-000000000001"


def line(kind: str, **payload: Any) -> dict[str, Any]:
    return {"timestamp": "2026-05-01T00:00:00Z", "type": kind, "payload": payload}


def meta(tid: str = TID, cwd: str = "/w", **extra: Any) -> dict[str, Any]:
    return line("session_meta", id=tid, cwd=cwd, cli_version="0.163.0", originator="codex_exec", **extra)


def event(kind: str, **payload: Any) -> dict[str, Any]:
    return line("event_msg", type=kind, **payload)


def message(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return line("response_item", type="message", role=role, content=[{"type": kind, "text": text}])


def call(call_id: str, name: str = "exec_command") -> dict[str, Any]:
    return line("response_item", type="function_call", name=name, call_id=call_id, arguments="{}")


def output(call_id: str) -> dict[str, Any]:
    return line("response_item", type="function_call_output", call_id=call_id, output="ok")


def turn(turn_id: str, prompt: str, answer: str, *middle: dict[str, Any], end: str = "task_complete") -> list:
    return [
        event("task_started", turn_id=turn_id),
        message("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
        message("user", prompt),
        *middle,
        message("assistant", answer),
        event(end, turn_id=turn_id),
    ]


def rollout(*records: dict[str, Any] | bytes) -> bytes:
    return b"".join(r if isinstance(r, bytes) else json.dumps(r).encode() + b"\n" for r in records)


def tool_turns(first: dict[str, Any], size: int, tool_output: str) -> tuple[bytes, int]:
    """A rollout of `first` then turns that each run one tool printing `tool_output`, until it
    holds at least `size` bytes; and its number of turns. For benchmarks of large rollouts."""
    parts = tool_turn_parts(first, size, tool_output)
    return b"".join(parts), len(parts) - 1


def tool_turn_parts(first: dict[str, Any], size: int, tool_output: str) -> list[bytes]:
    """`tool_turns`'s rollout as its first line, then each turn's lines."""
    parts, total, turns = [rollout(first)], 0, 0
    while total < size:
        turns += 1
        tool = output(f"c{turns}")
        tool["payload"]["output"] = tool_output
        parts.append(
            rollout(*turn(f"t{turns}", f"question {turns}", f"answer {turns}", call(f"c{turns}"), tool))
        )
        total += len(parts[-1])
    return parts


def listed_as_read(data: bytes) -> Rollout:
    """`read_rollout(data)`, once asserted to say all a listing's read says: the same rollout,
    its turns only counted (or built, for a rollout without task events), also when the listing
    went on from its tally of any first part of the file (at each line's end and middle)."""
    full, (listed, _) = read_rollout(data), listed_rollout(data)
    assert listed.turns in ((), full.turns)
    assert listed == replace(full, turns=listed.turns) and full.turn_count == len(full.turns)
    ends = [at + 1 for at, byte in enumerate(data) if byte == ord("\n")]
    for cut in sorted({*ends, *((a + b) // 2 for a, b in zip([0, *ends], ends, strict=False))}):
        assert continued(data, cut) == listed, f"went on from byte {cut}"
    return full


def continued(data: bytes, cut: int) -> Rollout:
    """The listing of `data` after a listing of `data[:cut]`: from its tally, when it kept one."""
    _, tally = listed_rollout(data[:cut])
    if tally is None:
        return listed_rollout(data)[0]
    return listed_rollout(data[tally.size :], tally)[0]


def first_rollouts(files: dict[str, bytes]) -> Callable[[str, str], bytes | None]:
    """`inherited_history`'s reader of sessions no revert rotated: each has one rollout, whose
    id is the session's own."""
    return lambda session, rollout: files.get(session) if session == rollout else None
