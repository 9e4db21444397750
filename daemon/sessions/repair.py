"""Synthetic closers for a turn a crash left open (DSH `interruptedTurnClosers`, repair.ts).

remem never writes these into a log it did not create; they complete the in-memory
"balanced" view that DSH's own `inspect()` shows, which is what a fork of a crashed session
inherits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .models import SessionEvent

OUTCOME_UNKNOWN_TEXT = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. "
    "Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the "
    "operation is read-only or idempotent; if it may have side effects, first verify external "
    "state or ask the user. Do not retry blindly."
)
NOT_STARTED_TEXT = (
    "The tool call was interrupted before it started, so it had no effect. Retry it if it is still needed."
)


@dataclass
class _OpenState:
    open: bool = False
    turn: Any = None
    step: Any = None
    pending: dict[str, int | None] = field(default_factory=dict)  # callId -> tool/call seq

    def reset_calls(self) -> None:
        self.pending.clear()


def _tool_call_ids(data: Any) -> list[str]:
    message = data.get("message") if isinstance(data, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [
        b["id"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool-call" and isinstance(b.get("id"), str)
    ]


def _result_call_id(data: Any) -> Any:
    message = data.get("message") if isinstance(data, dict) else None
    source = message.get("source") if isinstance(message, dict) else None
    return source.get("callId") if isinstance(source, dict) else None


def _track(state: _OpenState, event: SessionEvent) -> None:
    data = event.data if isinstance(event.data, dict) else {}
    if event.type == "turn/start":
        state.open, state.turn, state.step = True, data.get("turn"), None
        state.reset_calls()
    elif event.type == "turn/end":
        state.open, state.turn, state.step = False, None, None
        state.reset_calls()
    elif event.type == "step/start":
        state.step = data.get("step")
    elif event.type == "step/end":
        state.step = None
        state.reset_calls()
    elif event.type == "assistant/message":
        for call_id in _tool_call_ids(event.data):
            state.pending.setdefault(call_id, None)
    elif event.type == "tool/call" and data.get("callId") in state.pending:
        state.pending[data["callId"]] = event.seq
    elif event.type == "tool/result":
        state.pending.pop(_result_call_id(event.data), None)


def _closing_result(
    state: _OpenState, call_id: str, call_seq: int | None, seq: int, time: int
) -> SessionEvent:
    started = call_seq is not None
    block = {
        "type": "tool-result",
        "toolCallId": call_id,
        "isError": True,
        "content": [{"type": "text", "text": OUTCOME_UNKNOWN_TEXT if started else NOT_STARTED_TEXT}],
    }
    message = {
        "id": f"interrupted-tool-result-{call_id}-{seq}",
        "role": "user",
        "source": {"kind": "tool", "callId": call_id},
        "content": [block],
    }
    error = (
        {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
        if started
        else {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
    )
    data = {"turn": state.turn, "step": state.step, "message": message, "error": error}
    return SessionEvent(
        type="tool/result",
        seq=seq,
        time=time,
        data=data,
        surfaceOp="append",
        sourceEventSeqs=None if call_seq is None else [call_seq],
    )


def interrupted_turn_closers(events: list[SessionEvent]) -> list[SessionEvent]:
    """Events that would close a turn left open at the end of `events` (empty if none is)."""
    state = _OpenState()
    for event in events:
        _track(state, event)
    if not state.open:
        return []
    seq, time = events[-1].seq + 1, events[-1].time
    closers = []
    for call_id, call_seq in state.pending.items():
        closers.append(_closing_result(state, call_id, call_seq, seq, time))
        seq += 1
    if state.step is not None:
        closers.append(
            SessionEvent(type="step/end", seq=seq, time=time, data={"turn": state.turn, "step": state.step})
        )
        seq += 1
    closers.append(
        SessionEvent(
            type="turn/end", seq=seq, time=time, data={"turn": state.turn, "reason": {"kind": "interrupted"}}
        )
    )
    return closers
