"""A scripted fake of the Anthropic Messages API, streaming as Claude Code requests it.

Claude Code (`claude -p`) posts to ``/v1/messages?beta=true`` with ``"stream": true`` and reads
server-sent events: ``message_start``, per content block ``content_block_start`` /
``content_block_delta`` / ``content_block_stop``, then ``message_delta`` (the stop reason) and
``message_stop``. Each request consumes the next scripted reply and is recorded, so a test can
assert what the harness sent the model (for a resumed session: the prior conversation).

Replies: `text` (an answer), `tool_uses` (one or more parallel ``tool_use`` blocks), `cut` (the
stream stops after ``message_start`` and the connection closes), and the shared ones of
`streaming`: `status` (an HTTP error, marked ``x-should-retry: false``, though Claude Code may
retry some anyway), `hang` and `Computed`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tests.fake_openai import ScriptedServer, Text, hang, status, text

from .streaming import StreamingHandler

__all__ = ["Cut", "FakeAnthropic", "ToolUses", "cut", "hang", "status", "text", "tool_uses"]

MESSAGES_PATH = "/v1/messages"


@dataclass(frozen=True)
class ToolUses:
    """An assistant message with optional text and ``tool_use`` blocks (several = parallel calls)."""

    calls: tuple[tuple[str, dict[str, Any]], ...]
    text: str | None = None


@dataclass(frozen=True)
class Cut:
    """The stream starts, then the connection closes before any content: the turn is aborted."""


def tool_uses(*calls: tuple[str, dict[str, Any]], text: str | None = None) -> ToolUses:
    """``tool_uses(("Read", {"file_path": p}), ...)``: one ``tool_use`` block per call."""
    return ToolUses(calls=tuple(calls), text=text)


def cut() -> Cut:
    return Cut()


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


class _MessagesHandler(StreamingHandler):
    fake_name = "FakeAnthropic"
    route = MESSAGES_PATH
    replies = (Text, ToolUses, Cut)

    def _send_error(self, code: int, message: str, headers: dict[str, str] | None = None) -> None:
        kind = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}.get(
            code, "api_error"
        )
        body = {"type": "error", "error": {"type": kind, "message": message}}
        self._send_json(code, body, {"x-should-retry": "false", **(headers or {})})

    def events(self, reply: Text | ToolUses | Cut, body: dict[str, Any], number: int) -> Iterator[bytes]:
        message = {
            "id": f"msg_fake_{number}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "fake-model",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 0},
        }
        yield _event("message_start", {"type": "message_start", "message": message})
        if isinstance(reply, Cut):
            return
        yield from _blocks(reply, number)
        stop = "tool_use" if isinstance(reply, ToolUses) else "end_turn"
        delta = {"stop_reason": stop, "stop_sequence": None}
        yield _event(
            "message_delta", {"type": "message_delta", "delta": delta, "usage": {"output_tokens": 1}}
        )
        yield _event("message_stop", {"type": "message_stop"})


def _blocks(reply: Text | ToolUses, number: int) -> Iterator[bytes]:
    """The content-block events of `reply`, in order."""
    said = reply.content if isinstance(reply, Text) else reply.text
    index = 0
    if said:
        yield _event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        )
        yield _event(
            "content_block_delta",
            {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": said}},
        )
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    for call, (name, arguments) in enumerate(reply.calls if isinstance(reply, ToolUses) else ()):
        block = {"type": "tool_use", "id": f"toolu_fake_{number}_{call}", "name": name, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
        yield _event(
            "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
        )
        yield _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1


class FakeAnthropic(ScriptedServer):
    """A local Anthropic Messages server (SSE) answering from a script; ``base_url`` has no ``/v1``."""

    handler = _MessagesHandler

    @property
    def base_url(self) -> str:
        return self.origin
