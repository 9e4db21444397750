"""Load-time checks DSH applies to every event before a session may be resumed.

A log that passes the scanner can still be refused by DSH's core (coordinator.ts, core
`index.ts`); remem applies the same rules so it never calls a log readable that DSH rejects,
and its writer refuses to produce one. Unknown event types are the exception: they are
carried through and reported, because a newer harness may have written them.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from .models import SURFACE_TYPES, SessionEvent
from .vocabulary import KNOWN_EVENT_TYPES, REFUSED_LEGACY_TYPES


class EventCheckError(ValueError):
    """An event DSH would refuse; the message names the event and the rule."""


def _non_empty_str(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _check_message(message: Any, role: str, where: str) -> dict[str, Any]:
    if not isinstance(message, dict):
        raise EventCheckError(f"{where}: message must be an object")
    if not _non_empty_str(message.get("id")):
        raise EventCheckError(f"{where}: message needs a non-empty id")
    if message.get("role") != role:
        raise EventCheckError(f"{where}: message role must be {role!r}")
    source = message.get("source")
    if not isinstance(source, dict) or not isinstance(source.get("kind"), str):
        raise EventCheckError(f"{where}: message source.kind must be a string")
    return source


def _check_assistant(data: Any, where: str) -> None:
    source = _check_message(data.get("message") if isinstance(data, dict) else None, "assistant", where)
    if source["kind"] != "model" or not (
        _non_empty_str(source.get("provider")) and _non_empty_str(source.get("model"))
    ):
        raise EventCheckError(f"{where}: assistant source must be kind 'model' with provider and model")


def _check_tool_result(data: Any, where: str) -> None:
    message = data.get("message") if isinstance(data, dict) else None
    source = _check_message(message, "user", where)
    content = message.get("content") if isinstance(message, dict) else None
    blocks = (
        [b for b in content if isinstance(b, dict) and b.get("type") == "tool-result"]
        if isinstance(content, list)
        else []
    )
    if len(blocks) != 1 or blocks[0].get("toolCallId") != source.get("callId"):
        raise EventCheckError(
            f"{where}: tool/result needs exactly one tool-result block matching source.callId"
        )


def _check_request_header(data: Any, where: str) -> None:
    header = data.get("header") if isinstance(data, dict) else None
    config = header.get("config") if isinstance(header, dict) else None
    if not isinstance(config, dict) or not (
        _non_empty_str(config.get("provider")) and _non_empty_str(config.get("model"))
    ):
        raise EventCheckError(f"{where}: request/header needs config.provider and config.model")
    if data.get("reason") == "fallback":
        raise EventCheckError(f"{where}: request/header reason 'fallback' is retired legacy vocabulary")


def _check_payload(event: SessionEvent, where: str) -> None:
    if event.type == "user/message":
        _check_message(event.data, "user", where)
    elif event.type == "assistant/message":
        _check_assistant(event.data, where)
    elif event.type == "tool/result":
        _check_tool_result(event.data, where)
    elif event.type == "request/header":
        _check_request_header(event.data, where)


def _check_surface(event: SessionEvent, where: str) -> None:
    if event.type in SURFACE_TYPES:
        if event.surfaceOp is None:
            raise EventCheckError(f"{where}: surface event {event.type} must carry surfaceOp")
    elif event.surfaceOp is not None or event.sourceEventSeqs is not None:
        raise EventCheckError(f"{where}: only surface events may carry surfaceOp/sourceEventSeqs")
    seqs = event.sourceEventSeqs or []
    if len(set(seqs)) != len(seqs) or any(s >= event.seq for s in seqs):
        raise EventCheckError(f"{where}: sourceEventSeqs must be unique and strictly earlier")
    if event.sourceEventSeqs == [] and event.type != "assistant/message":
        raise EventCheckError(f"{where}: only assistant/message may have empty sourceEventSeqs")


def check_event(record: dict[str, Any], *, where: str) -> SessionEvent:
    """Validate one (already upgraded) record into a `SessionEvent` or raise `EventCheckError`."""
    kind = record.get("type")
    if kind in REFUSED_LEGACY_TYPES:
        raise EventCheckError(f"{where}: {kind} is retired legacy vocabulary DSH refuses")
    try:
        event = SessionEvent.model_validate(record)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'record'}: {e['msg']}" for e in exc.errors())
        raise EventCheckError(f"{where}: bad event envelope ({problems})") from None
    _check_surface(event, where)
    _check_payload(event, where)
    return event


def is_unknown(event: SessionEvent) -> bool:
    return event.type not in KNOWN_EVENT_TYPES


def check_writable(event: SessionEvent, *, where: str) -> None:
    """What remem may write into a DSH log: unknown types only when `ignorable`."""
    if is_unknown(event) and not event.ignorable:
        raise EventCheckError(f"{where}: custom event type {event.type!r} must carry ignorable: true")
