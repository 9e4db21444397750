"""What a transcript says of a tool call beyond its name and outcome: what it was asked (its
command, file or pattern) and, when it failed, the first line of what it returned; and why a
Codex turn ended in an error or was stopped. A DSH transcript takes the same words (`asked`,
`first_line`) from its own events.

Only the transcript needs this, so the readers (and the listing) never decode a tool's input or
output: these lines are read again here, and only those whose bytes can hold a call, a result
or a turn's end are decoded at all.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from .formats.jsonl import replaced_utf8

# Which input of a tool says what it was asked, in this order; else its first text input.
_MAIN_INPUTS = ("command", "cmd", "file_path", "path", "pattern", "url", "query", "description", "prompt")
# The bytes a line must hold to be a call, a result or a turn's end of either harness.
_MARKERS = (
    b'"tool_use"',
    b'"tool_result"',
    b'"function_call',
    b'"custom_tool_call',
    b'"exec_command_end"',
    b'"patch_apply_end"',
    b'"CommandExecution"',
    b'"task_complete"',
    b'"turn_aborted"',
)
SHOWN_CHARS = 160  # of an argument or an error: one line a person reads at a glance


@dataclass
class ToolDetails:
    """By call id, what each call was asked and what a failed one said; by the line that ends
    a turn, why it ended in an error or was stopped."""

    asked: dict[str, str] = field(default_factory=dict)
    said: dict[str, str] = field(default_factory=dict)
    endings: dict[int, str] = field(default_factory=dict)


def tool_details(data: bytes) -> ToolDetails:
    """The details of every call and turn ending in `data`, a Claude Code or Codex file."""
    details = ToolDetails()
    for number, record in _records(data):
        if record.get("type") in ("assistant", "user"):
            _claude_code(record, details)
        else:
            _codex(number, record, details)
    return details


def _records(data: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not any(marker in line for marker in _MARKERS):
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            # A line that is not UTF-8 is read with U+FFFD for its bad bytes, as the Claude
            # Code reader reads it (decision 0415); any other the reader reports.
            mended = replaced_utf8(line)
            try:
                record = orjson.loads(mended) if mended is not line else None
            except orjson.JSONDecodeError:
                record = None
        if isinstance(record, dict):
            yield number, record


def _claude_code(record: dict[str, Any], details: ToolDetails) -> None:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
            details.asked[block["id"]] = asked(block.get("input"))
        elif (
            block.get("type") == "tool_result"
            and block.get("is_error") is True
            and isinstance(block.get("tool_use_id"), str)
        ):
            details.said[block["tool_use_id"]] = first_line(block.get("content"))


def _codex(number: int, record: dict[str, Any], details: ToolDetails) -> None:
    payload = record.get("payload")
    if not isinstance(payload, dict):
        return
    kind, call = payload.get("type"), payload.get("call_id")
    if kind in ("function_call", "custom_tool_call") and isinstance(call, str):
        given = payload.get("arguments", payload.get("input"))
        details.asked[call] = asked(json_object(given) if kind == "function_call" else given)
    elif kind == "exec_command_end" and isinstance(call, str):
        _exited(call, payload, details)
    elif kind == "item_completed" and isinstance(item := payload.get("item"), dict):
        if item.get("type") == "CommandExecution" and isinstance(item.get("id"), str):
            _exited(item["id"], item, details)
    elif kind == "patch_apply_end" and isinstance(call, str) and payload.get("success") is False:
        details.said[call] = first_line(payload.get("stderr")) or "the patch did not apply"
    elif kind == "task_complete" and payload.get("error"):
        details.endings[number] = first_line(_error_message(payload["error"]))
    elif kind == "turn_aborted":
        reason = payload.get("reason")
        details.endings[number] = f"stopped ({reason})" if isinstance(reason, str) and reason else "stopped"


def _exited(call: str, command: dict[str, Any], details: ToolDetails) -> None:
    """A command's end (`exec_command_end`, or a `CommandExecution` item): how it failed."""
    code = command.get("exit_code")
    if code in (0, None):
        return
    output = command.get("stderr") or command.get("aggregated_output") or command.get("formatted_output")
    said = first_line(output)
    details.said[call] = f"exit {code}" + (f": {said}" if said else "")


def _error_message(error: Any) -> Any:
    """A failed turn's message: Codex keeps the provider's error body, JSON, as its message."""
    message = error.get("message") if isinstance(error, dict) else error
    body = json_object(message)
    inner = body.get("error") if isinstance(body, dict) else None
    return inner.get("message", message) if isinstance(inner, dict) else message


def json_object(text: Any) -> Any:
    """A function call's arguments, a JSON object in a string."""
    if not isinstance(text, str):
        return text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def asked(given: Any) -> str:
    """A tool input's main argument on one line: a command as a shell line, else a path, a
    pattern, ...; a plain text input (a patch) by its first line."""
    if isinstance(given, dict):
        for key in _MAIN_INPUTS:
            value = given.get(key)
            if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
                return _short(shlex.join(value))
            if isinstance(value, str) and value.strip():
                return first_line(value)
        return next((first_line(v) for v in given.values() if isinstance(v, str) and v.strip()), "")
    return first_line(given)


def first_line(content: Any) -> str:
    """The first line with text of a string, or of a list of text blocks (a tool's result)."""
    if isinstance(content, list):
        texts = (b.get("text") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
        content = "\n".join(t for t in texts if t)
    if not isinstance(content, str):
        return ""
    return _short(next((line.strip() for line in content.splitlines() if line.strip()), ""))


def _short(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1].rstrip() + "…"
