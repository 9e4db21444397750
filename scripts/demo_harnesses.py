"""The demo's Claude Code transcript and Codex rollout, written as those harnesses write them.

Each is a scripted conversation (`ScriptedTurn`s) laid out where its harness keeps sessions,
so that remem reads it as it reads a real one and its harness resumes a fork of it
(docs/sessions.md has both formats):

- Claude Code (2.1): ``<config>/projects/<cwd, each character not a letter or digit a dash>/<id>.jsonl``,
  one record a line, each chained to the one before by ``parentUuid``; a tool call is an
  assistant ``tool_use`` block answered by a user ``tool_result`` block.
- Codex (0.16x): ``<home>/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``, its
  ``session_meta`` on line 1, each turn from ``task_started`` to ``task_complete``, the prompt
  both as a user message item and a ``user_message`` event, a tool call a ``function_call``
  answered by its ``function_call_output``.

Ids and times are derived from the arguments, so a seed writes the same bytes every time.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from remem.daemon.sessions.harness_sources import claude_folders
from remem.daemon.sessions.scripted import ScriptedTool, ScriptedTurn

CLAUDE_CODE_VERSION = "2.1.0"
CLAUDE_MODEL = "claude-sonnet-4-5"
CODEX_VERSION = "0.163.0"
_IDS = uuid.UUID("6d656d6f-7265-4d65-8d2d-64656d6f2121")  # the namespace of every derived id


def derived_id(*parts: object) -> str:
    """A fixed uuid for `parts`: the same on every seed, distinct for distinct parts."""
    return str(uuid.uuid5(_IDS, "/".join(map(str, parts))))


def write_claude_code_session(
    config: Path, cwd: str, session_id: str, turns: Sequence[ScriptedTurn], start: datetime
) -> Path:
    """Write `turns` as Claude Code session `session_id` of `cwd` under its config folder `config`."""
    path = config / "projects" / claude_folders(cwd)[0] / f"{session_id}.jsonl"
    records = _chained(session_id, cwd, _claude_messages(session_id, turns), _clock(start))
    return _write_lines(path, records)


def _claude_messages(session_id: str, turns: Sequence[ScriptedTurn]) -> Iterator[tuple[str, Any]]:
    """(role, content) of each message of `turns`, as Claude Code sends them to the model."""
    for number, turn in enumerate(turns, 1):
        yield "user", turn.user
        for index, tool in enumerate(turn.tools):
            call = "toolu_" + derived_id(session_id, number, index).replace("-", "")[:24]
            yield "assistant", [{"type": "tool_use", "id": call, "name": tool.name, "input": tool.arguments}]
            result = {"type": "tool_result", "tool_use_id": call, "content": tool.output.text}
            yield "user", [{**result, "is_error": not tool.output.ok}]
        yield "assistant", [{"type": "text", "text": turn.reply}]


def _chained(
    session_id: str, cwd: str, messages: Iterator[tuple[str, Any]], clock: Iterator[str]
) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    parent: str | None = None
    for index, (role, content) in enumerate(messages):
        record_id = derived_id(session_id, index)
        message: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant":
            message = {"id": f"msg_{record_id[:8]}", "type": "message", "model": CLAUDE_MODEL, **message}
        records.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": cwd,
                "sessionId": session_id,
                "version": CLAUDE_CODE_VERSION,
                "type": role,
                "message": message,
                "uuid": record_id,
                "timestamp": next(clock),
            }
        )
        parent = record_id
    return records


def write_codex_session(
    home: Path, cwd: str, thread_id: str, turns: Sequence[ScriptedTurn], start: datetime
) -> Path:
    """Write `turns` as Codex thread `thread_id` of `cwd` under its home folder `home`."""
    day = home / "sessions" / start.strftime("%Y") / start.strftime("%m") / start.strftime("%d")
    path = day / f"rollout-{start.strftime('%Y-%m-%dT%H-%M-%S')}-{thread_id}.jsonl"
    clock = _clock(start)
    meta = {
        "id": thread_id,
        "timestamp": next(clock),
        "cwd": cwd,
        "originator": "codex_cli_rs",
        "cli_version": CODEX_VERSION,
        "source": "cli",
        "model_provider": "openai",
    }
    lines = [_codex_line(meta["timestamp"], "session_meta", meta)]
    for number, turn in enumerate(turns, 1):
        lines += [_codex_line(next(clock), kind, payload) for kind, payload in _codex_turn(cwd, number, turn)]
    return _write_lines(path, lines)


def _codex_turn(cwd: str, number: int, turn: ScriptedTurn) -> Iterator[tuple[str, dict[str, Any]]]:
    turn_id = str(number)
    yield "event_msg", {"type": "task_started", "turn_id": turn_id}
    if number == 1:  # Codex tells the model where it works before the first prompt
        yield (
            "response_item",
            _message("user", f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"),
        )
    yield "response_item", _message("user", turn.user)
    yield "event_msg", {"type": "user_message", "message": turn.user, "images": []}
    for index, tool in enumerate(turn.tools):
        yield from _codex_call(f"call_{number}_{index}", tool)
    yield "response_item", _message("assistant", turn.reply)
    yield "event_msg", {"type": "agent_message", "message": turn.reply}
    yield "event_msg", {"type": "task_complete", "turn_id": turn_id, "last_agent_message": turn.reply}


def _codex_call(call_id: str, tool: ScriptedTool) -> Iterator[tuple[str, dict[str, Any]]]:
    arguments = json.dumps(tool.arguments)
    yield (
        "response_item",
        {"type": "function_call", "name": tool.name, "arguments": arguments, "call_id": call_id},
    )
    yield "response_item", {"type": "function_call_output", "call_id": call_id, "output": tool.output.text}


def _message(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def _codex_line(timestamp: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": timestamp, "type": kind, "payload": payload}


def _clock(start: datetime) -> Iterator[str]:
    """Timestamps as both harnesses write them, a second apart from `start` (UTC)."""
    moment = start.astimezone(timezone.utc)
    while True:
        yield moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        moment += timedelta(seconds=1)


def _write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path
