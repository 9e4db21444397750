"""Load-time checks DSH applies to every event before a session may be resumed.

A log that passes the scanner can still be refused by DSH's core (coordinator.ts, core
`index.ts`); remem applies the same rules so it never calls a log readable that DSH rejects,
and its writer refuses to produce one. Unknown event types are the exception: they are
carried through and reported, because a newer harness may have written them.

The checks run once per event on every read, so they raise bare problems and `check_event`
adds the event's location only when one fires.
"""

from __future__ import annotations

from typing import Any

from .models import SURFACE_TYPES, EnvelopeError, SessionEvent, adopt_bare_record, event_from_record
from .upgrades import UPGRADED_TYPES
from .vocabulary import KNOWN_EVENT_TYPES, REFUSED_LEGACY_TYPES


class EventCheckError(ValueError):
    """An event DSH would refuse; the message names the event and the rule."""


def _non_empty_str(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _check_message(message: Any, role: str) -> dict[str, Any]:
    if not isinstance(message, dict):
        raise EventCheckError("message must be an object")
    if not _non_empty_str(message.get("id")):
        raise EventCheckError("message needs a non-empty id")
    if message.get("role") != role:
        raise EventCheckError(f"message role must be {role!r}")
    source = message.get("source")
    if not isinstance(source, dict) or not isinstance(source.get("kind"), str):
        raise EventCheckError("message source.kind must be a string")
    return source


def _check_user_message(data: Any) -> None:
    _check_message(data, "user")


def _check_assistant(data: Any) -> None:
    source = _check_message(data.get("message") if isinstance(data, dict) else None, "assistant")
    if source["kind"] != "model" or not (
        _non_empty_str(source.get("provider")) and _non_empty_str(source.get("model"))
    ):
        raise EventCheckError("assistant source must be kind 'model' with provider and model")


def _check_tool_result(data: Any) -> None:
    message = data.get("message") if isinstance(data, dict) else None
    source = _check_message(message, "user")
    content = message.get("content") if isinstance(message, dict) else None
    blocks = (
        [b for b in content if isinstance(b, dict) and b.get("type") == "tool-result"]
        if isinstance(content, list)
        else []
    )
    if len(blocks) != 1 or blocks[0].get("toolCallId") != source.get("callId"):
        raise EventCheckError("tool/result needs exactly one tool-result block matching source.callId")


def _check_request_header(data: Any) -> None:
    header = data.get("header") if isinstance(data, dict) else None
    config = header.get("config") if isinstance(header, dict) else None
    if not isinstance(config, dict) or not (
        _non_empty_str(config.get("provider")) and _non_empty_str(config.get("model"))
    ):
        raise EventCheckError("request/header needs config.provider and config.model")
    if data.get("reason") == "fallback":
        raise EventCheckError("request/header reason 'fallback' is retired legacy vocabulary")


# Each payload rule, by type: raises `EventCheckError` saying what is wrong.
PAYLOAD_CHECKS = {
    "user/message": _check_user_message,
    "assistant/message": _check_assistant,
    "tool/result": _check_tool_result,
    "request/header": _check_request_header,
}


def _check_surface(event: SessionEvent) -> None:
    seqs = event.sourceEventSeqs
    if event.type in SURFACE_TYPES:
        if event.surfaceOp is None:
            raise EventCheckError(f"surface event {event.type} must carry surfaceOp")
    elif event.surfaceOp is not None or seqs is not None:
        raise EventCheckError("only surface events may carry surfaceOp/sourceEventSeqs")
    if seqs is None:
        return
    if not seqs:
        if event.type != "assistant/message":
            raise EventCheckError("only assistant/message may have empty sourceEventSeqs")
    elif max(seqs) >= event.seq or len(set(seqs)) != len(seqs):
        raise EventCheckError("sourceEventSeqs must be unique and strictly earlier")


def check_event(record: dict[str, Any], *, where: str | None = None, adopt: bool = False) -> SessionEvent:
    """Validate one (already upgraded) record into a `SessionEvent` or raise `EventCheckError`.

    `where` prefixes the error; it defaults to "event seq N" from the record. `adopt` is
    `event_from_record`'s: the event may take the record over as its `__dict__`.
    """
    bare = len(record) == 4  # no surface fields, once the envelope check has passed
    try:
        event = event_from_record(record, adopt=adopt)
        kind = record["type"]  # `event.type`, without a pydantic attribute read
        if kind in REFUSED_LEGACY_TYPES:
            raise EventCheckError(f"{kind} is retired legacy vocabulary DSH refuses")
        if not bare or kind in SURFACE_TYPES:  # a bare non-surface event passes every surface rule
            _check_surface(event)
        payload_check = PAYLOAD_CHECKS.get(kind)
        if payload_check is not None:
            payload_check(event.data)
    except EnvelopeError as exc:
        raise EventCheckError(f"{_location(record, where)}: bad event envelope ({exc})") from None
    except EventCheckError as exc:
        raise EventCheckError(f"{_location(record, where)}: {exc}") from None
    return event


# Known types on which no upgrade shim, refusal, surface or payload rule acts, so that a bare
# record of one (exactly the four envelope keys) passes `check_event` once its envelope does.
# Unknown types are left out, so that every type outside `KNOWN_EVENT_TYPES` still passes
# through `check_event`'s caller, which reports them.
BARE_TYPES: frozenset[str] = (
    KNOWN_EVENT_TYPES - UPGRADED_TYPES - REFUSED_LEGACY_TYPES - SURFACE_TYPES - PAYLOAD_CHECKS.keys()
)


def checked_bare_event(record: dict[str, Any]) -> SessionEvent | None:
    """`check_event(upgrade(record), adopt=True)` of the commonest records, without the rest.

    Returns None, leaving the record untouched, unless it is a bare record of a `BARE_TYPES`
    type that `adopt_bare_record` takes: the caller then runs the full path, upgrade included.
    """
    kind = record.get("type")
    if len(record) == 4 and kind.__class__ is str and kind in BARE_TYPES:
        return adopt_bare_record(record)
    return None


def _location(record: dict[str, Any], where: str | None) -> str:
    return where or f"event seq {record.get('seq')}"


def is_unknown(event: SessionEvent) -> bool:
    return event.type not in KNOWN_EVENT_TYPES


def check_writable(event: SessionEvent, *, where: str) -> None:
    """What remem may write into a DSH log: unknown types only when `ignorable`."""
    if is_unknown(event) and not event.ignorable:
        raise EventCheckError(f"{where}: custom event type {event.type!r} must carry ignorable: true")
