"""Read-side upgrades of older event shapes (coordinator.ts shims), applied in memory only.

DSH never rewrites an old log; it upgrades each event as it loads, so remem must do the same
to see the events DSH would hand to a session. Each shim maps one record dict to a new dict.
Only one shim needs history (a legacy tool-result replacement reuses the replaced result's
message id), so an upgrader started mid-log can say when it lacks that history.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _legacy_id(session_id: str, seq: Any) -> str:
    return f"legacy-message:{session_id}:{seq}"


def _upgrade_turn_end_reason(reason: Any) -> Any:
    if not isinstance(reason, dict):
        return reason
    kind = reason.get("kind")
    if kind == "aborted" and "reason" not in reason:
        return {"kind": "aborted", "reason": {"kind": "legacy"}}
    if kind == "disposed":
        return {"kind": "aborted", "reason": {"kind": "disposed"}}
    if kind == "error" and not isinstance(reason.get("error"), dict):
        message = reason.get("message", reason.get("error", ""))
        return {"kind": "error", "error": {"message": str(message), "code": reason.get("code", "UNKNOWN")}}
    return reason


# Types some shim may touch; `LegacyUpgrader.upgrade` returns a record of any other (string)
# type as it is, without looking at it, so a caller may skip the call for those.
UPGRADED_TYPES = frozenset(
    {"steering/message", "turn/start", "turn/end", "user/message", "assistant/message", "tool/result"}
)


def _turn_end_shim(data: dict[str, Any]) -> bool:
    return "reason" in data and _upgrade_turn_end_reason(data["reason"]) is not data["reason"]


# For each type a shim may touch but the type rename (steering/message): whether it changes a
# record with this object payload (a payload of another kind is never changed).
PAYLOAD_SHIMS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "turn/start": lambda data: "trigger" in data,
    "turn/end": _turn_end_shim,
    "user/message": lambda data: "id" not in data and "role" not in data,
    "assistant/message": lambda data: "message" not in data and "content" in data,
    "tool/result": lambda data: "message" not in data and "callId" in data,
}


def upgrades(kind: str, data: Any) -> bool:
    """Whether `LegacyUpgrader.upgrade` changes a record of this type and payload.

    A scan that proves a line current (`envelopes`) asks this instead of upgrading it: a line
    it answers True for takes the upgrader's path.
    """
    if kind == "steering/message":
        return True
    shim = PAYLOAD_SHIMS.get(kind)
    return shim is not None and isinstance(data, dict) and shim(data)


class NeedsHistory(ValueError):
    """Upgrading a record needs a record from before the upgrader's first seq."""


def _replaced_seq(record: dict[str, Any]) -> int | float | None:
    op = record.get("surfaceOp")
    start = op.get("start") if isinstance(op, dict) else None
    return start if isinstance(start, (int, float)) and not isinstance(start, bool) else None


class LegacyUpgrader:
    """Upgrades one session's records in seq order (tool-result replacements need history).

    `first_seq` is the seq of the first record it will see; when that is not 0 and a record
    needs one of the earlier records, `upgrade` raises `NeedsHistory`.
    """

    def __init__(self, session_id: str, *, first_seq: int = 0) -> None:
        self._session_id = session_id
        self._first_seq = first_seq
        # The message id of each tool/result by seq. A skimming scan notes those of the current
        # results it proves (`note_result`) before this upgrader sees the records around them.
        self._tool_result_ids: dict[Any, str] = {}

    def note_result(self, seq: int, message_id: str) -> None:
        """A current tool/result's message id, for a later legacy replacement of it."""
        self._tool_result_ids[seq] = message_id

    def upgrade(self, record: dict[str, Any]) -> dict[str, Any]:
        kind = record.get("type")
        if not isinstance(kind, str) or kind not in UPGRADED_TYPES:
            return record
        data = record.get("data")
        if kind == "steering/message":
            record = {**record, "type": "user/message"}
            kind = "user/message"
        if not isinstance(data, dict):
            return record
        if kind == "turn/start" and "trigger" in data:
            return {**record, "data": {k: v for k, v in data.items() if k != "trigger"}}
        if kind == "turn/end" and "reason" in data:
            reason = _upgrade_turn_end_reason(data["reason"])
            return record if reason is data["reason"] else {**record, "data": {**data, "reason": reason}}
        if kind == "user/message" and "id" not in data and "role" not in data:
            return {
                **record,
                "data": {"id": _legacy_id(self._session_id, record.get("seq")), "role": "user", **data},
            }
        if kind == "assistant/message" and "message" not in data and "content" in data:
            return {**record, "data": self._assistant(record, data)}
        if kind == "tool/result":
            return self._tool_result(record, data)
        return record

    def _assistant(self, record: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        rest = {k: v for k, v in data.items() if k not in ("content", "provenance")}
        provenance = data.get("provenance")
        if not isinstance(provenance, dict):
            provenance = {}
        message = {
            "id": _legacy_id(self._session_id, record.get("seq")),
            "role": "assistant",
            "content": data["content"],
            "source": {**provenance, "kind": "model"},
        }
        return {**rest, "message": message}

    def _tool_result(self, record: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        if "message" in data or "callId" not in data:
            if isinstance(data.get("message"), dict):
                self._tool_result_ids[record.get("seq")] = data["message"].get("id")
            return record
        replaced = _replaced_seq(record)
        seq = record.get("seq")
        if replaced is not None and isinstance(seq, (int, float)) and replaced >= seq:
            replaced = None  # seq order notes no id of a later result (`note_result` may have)
        message_id = self._tool_result_ids.get(self._known_seq(replaced)) or _legacy_id(
            self._session_id, record.get("seq")
        )
        self._tool_result_ids[record.get("seq")] = message_id
        block: dict[str, Any] = {
            "type": "tool-result",
            "toolCallId": data["callId"],
            "content": data.get("content", []),
        }
        if "isError" in data:
            block["isError"] = data["isError"]
        rest = {k: v for k, v in data.items() if k not in ("callId", "content", "isError")}
        message = {
            "id": message_id,
            "role": "user",
            "content": [block],
            "source": {"kind": "tool", "callId": data["callId"]},
        }
        return {**record, "data": {**rest, "message": message}}

    def _known_seq(self, seq: int | float | None) -> int | float | None:
        """`seq` itself, once sure its record (if any) has been seen."""
        if seq is not None and seq < self._first_seq and seq not in self._tool_result_ids:
            raise NeedsHistory(f"a legacy tool/result replaces seq {seq}, before this read's first seq")
        return seq
