"""A scripted fake of the OpenAI Responses API, streaming as the Codex CLI requests it.

Codex (`codex exec`) posts to ``/v1/responses`` with ``"stream": true`` and reads server-sent
events: ``response.created``, per output item ``response.output_item.added`` / ``…done`` (text
also as ``response.output_text.delta``), then ``response.completed``. Each request consumes the
next scripted reply and is recorded, so a test can assert what the harness sent the model.

Replies: `text`, `function_calls` (one or more parallel ``function_call`` items), `status` (an
HTTP error), `cut` (``response.created`` and then the connection closes: an aborted turn) and
`Computed`. An exhausted script answers 500.
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

from .fake_anthropic import Cut, cut

__all__ = ["Cut", "FakeResponses", "FunctionCalls", "cut", "function_calls", "hang", "status", "text"]

RESPONSES_PATH = "/v1/responses"


@dataclass(frozen=True)
class FunctionCalls:
    """Output ``function_call`` items (several = parallel calls), each ``(name, arguments)``."""

    calls: tuple[tuple[str, dict[str, Any]], ...]


def function_calls(*calls: tuple[str, dict[str, Any]]) -> FunctionCalls:
    """``function_calls(("exec_command", {"cmd": "cat notes.txt"}), ...)``."""
    return FunctionCalls(calls=tuple(calls))


def _event(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def _items(reply: Text | FunctionCalls, number: int) -> Iterator[dict[str, Any]]:
    if isinstance(reply, Text):
        yield {
            "type": "message",
            "id": f"msg_fake_{number}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": reply.content, "annotations": []}],
        }
        return
    for call, (name, arguments) in enumerate(reply.calls):
        yield {
            "type": "function_call",
            "id": f"fc_fake_{number}_{call}",
            "call_id": f"call_fake_{number}_{call}",
            "name": name,
            "arguments": json.dumps(arguments),
            "status": "completed",
        }


class _ResponsesHandler(ScriptedHandler):
    fake_name = "FakeResponses"

    def do_GET(self) -> None:  # noqa: N802 (stdlib naming)
        self._send_error(404, f"FakeResponses: no route GET {self.path}")

    def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
        if self.path.split("?", 1)[0] != RESPONSES_PATH:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._send_error(404, f"FakeResponses: no route POST {self.path}")
            return
        body = self._read_json()
        if body is None:
            return
        number = self._record(body)
        reply = self._next_reply()
        while isinstance(reply, Computed):
            reply = reply.fn(body)
        if reply is None:
            self._send_error(500, f"FakeResponses: reply script exhausted at request #{number}")
        elif isinstance(reply, Status):
            self._send_error(reply.code, reply.message)
        elif isinstance(reply, Hang):
            self._wait(None)  # until the harness gives up (is interrupted) or the fake closes
        elif isinstance(reply, (Text, FunctionCalls, Cut)):
            self._stream(reply, number)
        else:
            raise TypeError(f"FakeResponses: not a reply: {reply!r}")

    def _stream(self, reply: Text | FunctionCalls | Cut, number: int) -> None:
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        response_id = f"resp_fake_{number}"
        try:
            self.wfile.write(_event({"type": "response.created", "response": {"id": response_id}}))
            if isinstance(reply, Cut):
                self.wfile.flush()
                return
            for index, item in enumerate(_items(reply, number)):
                self.wfile.write(
                    _event({"type": "response.output_item.added", "output_index": index, "item": item})
                )
                if item["type"] == "message":
                    delta = {
                        "type": "response.output_text.delta",
                        "output_index": index,
                        "content_index": 0,
                        "item_id": item["id"],
                        "delta": item["content"][0]["text"],
                    }
                    self.wfile.write(_event(delta))
                self.wfile.write(
                    _event({"type": "response.output_item.done", "output_index": index, "item": item})
                )
            usage = {
                "input_tokens": 1,
                "input_tokens_details": None,
                "output_tokens": 1,
                "output_tokens_details": None,
                "total_tokens": 2,
            }
            self.wfile.write(
                _event({"type": "response.completed", "response": {"id": response_id, "usage": usage}})
            )
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the harness gave up on the stream


class FakeResponses(ScriptedServer):
    """A local OpenAI Responses server (SSE) answering from a script; ``base_url`` ends in ``/v1``."""

    handler = _ResponsesHandler

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"
