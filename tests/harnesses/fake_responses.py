"""A scripted fake of the OpenAI Responses API, streaming as the Codex CLI requests it.

Codex (`codex exec`) posts to ``/v1/responses`` with ``"stream": true`` and reads server-sent
events: ``response.created``, per output item ``response.output_item.added`` / ``…done`` (text
also as ``response.output_text.delta``), then ``response.completed``. Each request consumes the
next scripted reply and is recorded, so a test can assert what the harness sent the model.

Replies: `text`, `function_calls` (one or more parallel ``function_call`` items), `cut`
(``response.created``, then the connection closes), and the shared ones of `streaming`:
`status`, `hang` and `Computed`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tests.fake_openai import ScriptedServer, Text, hang, status, text

from .fake_anthropic import Cut, cut
from .streaming import StreamingHandler

__all__ = ["Cut", "FakeResponses", "FunctionCalls", "cut", "function_calls", "hang", "status", "text"]

RESPONSES_PATH = "/v1/responses"


@dataclass(frozen=True)
class FunctionCalls:
    """Output ``function_call`` items (several = parallel calls), each ``(name, arguments)``;
    a ``namespace`` calls the tools Codex offers in one (an MCP server's: ``mcp__<server>``)."""

    calls: tuple[tuple[str, dict[str, Any]], ...]
    namespace: str | None = None


def function_calls(*calls: tuple[str, dict[str, Any]], namespace: str | None = None) -> FunctionCalls:
    """``function_calls(("exec_command", {"cmd": "cat notes.txt"}), ...)``."""
    return FunctionCalls(calls=tuple(calls), namespace=namespace)


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
        } | ({"namespace": reply.namespace} if reply.namespace else {})


class _ResponsesHandler(StreamingHandler):
    fake_name = "FakeResponses"
    route = RESPONSES_PATH
    replies = (Text, FunctionCalls, Cut)

    def events(self, reply: Text | FunctionCalls | Cut, body: dict[str, Any], number: int) -> Iterator[bytes]:
        response_id = f"resp_fake_{number}"
        yield _event({"type": "response.created", "response": {"id": response_id}})
        if isinstance(reply, Cut):
            return
        for index, item in enumerate(_items(reply, number)):
            yield _event({"type": "response.output_item.added", "output_index": index, "item": item})
            if item["type"] == "message":
                text_delta = {
                    "type": "response.output_text.delta",
                    "output_index": index,
                    "content_index": 0,
                    "item_id": item["id"],
                    "delta": item["content"][0]["text"],
                }
                yield _event(text_delta)
            yield _event({"type": "response.output_item.done", "output_index": index, "item": item})
        usage = {
            "input_tokens": 1,
            "input_tokens_details": None,
            "output_tokens": 1,
            "output_tokens_details": None,
            "total_tokens": 2,
        }
        yield _event({"type": "response.completed", "response": {"id": response_id, "usage": usage}})


class FakeResponses(ScriptedServer):
    """A local OpenAI Responses server (SSE) answering from a script; ``base_url`` ends in ``/v1``."""

    handler = _ResponsesHandler

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"
