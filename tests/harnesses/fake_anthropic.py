"""A scripted fake of the Anthropic Messages API, streaming as Claude Code requests it.

Claude Code (`claude -p`) posts to ``/v1/messages?beta=true`` with ``"stream": true`` and reads
server-sent events: ``message_start``, per content block ``content_block_start`` /
``content_block_delta`` / ``content_block_stop``, then ``message_delta`` (the stop reason) and
``message_stop``. Each request consumes the next scripted reply and is recorded, so a test can
assert what the harness sent the model (for a resumed session: the prior conversation).

Replies: `text` (an answer), `tool_uses` (one or more parallel ``tool_use`` blocks), `status`
(an HTTP error, never retried: ``x-should-retry: false``), `cut` (the stream stops after
``message_start`` and the connection closes: an aborted turn) and `Computed` (a reply chosen from
the request). An exhausted script answers 500, so an unexpected model call fails loudly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tests.fake_openai import (
    Computed,
    Hang,
    ScriptedHandler,
    ScriptedServer,
    Status,
    Text,
    hang,
    status,
    text,
)

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


class _MessagesHandler(ScriptedHandler):
    fake_name = "FakeAnthropic"

    def _send_error(self, code: int, message: str, headers: dict[str, str] | None = None) -> None:
        kind = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}.get(
            code, "api_error"
        )
        body = {"type": "error", "error": {"type": kind, "message": message}}
        self._send_json(code, body, {"x-should-retry": "false", **(headers or {})})

    def do_GET(self) -> None:  # noqa: N802 (stdlib naming)
        self._send_error(404, f"FakeAnthropic: no route GET {self.path}")

    def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
        if self.path.split("?", 1)[0] != MESSAGES_PATH:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._send_error(404, f"FakeAnthropic: no route POST {self.path}")
            return
        body = self._read_json()
        if body is None:
            return
        number = self._record(body)
        reply = self._next_reply()
        while isinstance(reply, Computed):
            reply = reply.fn(body)
        if reply is None:
            self._send_error(500, f"FakeAnthropic: reply script exhausted at request #{number}")
        elif isinstance(reply, Status):
            self._send_error(reply.code, reply.message)
        elif isinstance(reply, Hang):
            self._wait(None)  # until the harness gives up (is interrupted) or the fake closes
        elif isinstance(reply, (Text, ToolUses, Cut)):
            self._stream(reply, body, number)
        else:
            raise TypeError(f"FakeAnthropic: not a reply: {reply!r}")

    def _stream(self, reply: Text | ToolUses | Cut, body: dict[str, Any], number: int) -> None:
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
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
        try:
            self.wfile.write(_event("message_start", {"type": "message_start", "message": message}))
            if isinstance(reply, Cut):
                self.wfile.flush()
                return
            for chunk in _blocks(reply, number):
                self.wfile.write(chunk)
            stop = "tool_use" if isinstance(reply, ToolUses) else "end_turn"
            self.wfile.write(
                _event(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": {"output_tokens": 1},
                    },
                )
            )
            self.wfile.write(_event("message_stop", {"type": "message_stop"}))
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the harness gave up on the stream


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
