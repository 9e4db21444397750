"""A scripted fake of the OpenAI chat-completions HTTP API, for remem's tests.

Why a real HTTP server rather than a mocked transport: remem's daemon runs in a separate process
and reaches the model through ``base_url``, so only something listening on a socket can stand in
for the model there; and going over HTTP exercises the real ``openai`` SDK (3.x, httpx2) end to
end — request building, response parsing, retries, timeouts, cancellation — instead of a fake
that merely mirrors our own assumptions about it.

Usage::

    with FakeOpenAI(api_key="sk-test") as fake:
        fake.reply(tool_call({"ops": []}, reasoning="thinking..."), text("done"))
        client = AsyncOpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)
        ...
        assert fake.count == 2
        assert fake.requests[1]["messages"][-1]["role"] == "tool"

Each POST to ``/v1/chat/completions`` is recorded and consumes the next scripted reply. When the
script runs out, a responder set with ``reply_always(fn)`` answers; without one the fake answers
500 with ``x-should-retry: false`` (the SDK then does not retry), so an unexpected model call fails
loudly. Only ``/v1/chat/completions`` exists, and ``GET /v1/models`` once ``list_models([...])``
was called; no streaming.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from typing_extensions import Self

__all__ = [
    "Computed",
    "FakeOpenAI",
    "Hang",
    "Reply",
    "ScriptedHandler",
    "ScriptedServer",
    "Slow",
    "Status",
    "Text",
    "ToolCall",
    "hang",
    "slow",
    "status",
    "text",
    "tool_call",
]

CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
_POLL = 0.02  # seconds between checks for shutdown / client disconnect while waiting


# --- replies -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """An assistant message carrying one function tool call (``finish_reason: "tool_calls"``)."""

    arguments: str  # sent verbatim: may be malformed JSON on purpose
    name: str = "memory_review_propose"
    reasoning: str | None = None
    content: str | None = None


@dataclass(frozen=True)
class Text:
    """A plain assistant message (``finish_reason: "stop"``)."""

    content: str
    reasoning: str | None = None


@dataclass(frozen=True)
class Status:
    """An HTTP error with an OpenAI-style ``{"error": {...}}`` body."""

    code: int
    message: str
    retry_after: float | None = None


@dataclass(frozen=True)
class Slow:
    """Wait ``seconds`` (other requests are served meanwhile), then answer ``then``."""

    seconds: float
    then: Reply


@dataclass(frozen=True)
class Hang:
    """Never answer; the request ends when the client gives up or the fake shuts down."""


@dataclass(frozen=True)
class Computed:
    """A reply computed from the parsed request body; an exception in ``fn`` becomes a 500."""

    fn: Callable[[dict[str, Any]], Reply]


Reply = ToolCall | Text | Status | Slow | Hang | Computed


def tool_call(
    arguments: dict[str, Any] | str,
    *,
    name: str = "memory_review_propose",
    reasoning: str | None = None,
    content: str | None = None,
) -> ToolCall:
    """One function tool call; a dict is JSON-encoded, a str is sent verbatim.

    ``reasoning`` becomes the DeepSeek-style ``reasoning_content`` field of the message."""
    encoded = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(arguments=encoded, name=name, reasoning=reasoning, content=content)


def text(content: str, *, reasoning: str | None = None) -> Text:
    """A plain assistant answer."""
    return Text(content=content, reasoning=reasoning)


def status(code: int, message: str = "", retry_after: float | None = None) -> Status:
    """An HTTP error ``code``; ``retry_after`` (seconds) sets the ``Retry-After`` header."""
    return Status(code=code, message=message or f"FakeOpenAI scripted HTTP {code}", retry_after=retry_after)


def slow(seconds: float, then: Reply | None = None) -> Slow:
    """Answer ``then`` (default: ``text("")``) after ``seconds``; interrupted by shutdown."""
    return Slow(seconds=seconds, then=text("") if then is None else then)


def hang() -> Hang:
    """Never answer (for client timeouts and cancellation)."""
    return Hang()


# --- server --------------------------------------------------------------------------------------


_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("not_found_error", None),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}


def _error_body(code: int, message: str) -> dict[str, Any]:
    err_type, err_code = _ERROR_TYPES.get(
        code, ("server_error" if code >= 500 else "invalid_request_error", None)
    )
    return {"error": {"message": message, "type": err_type, "param": None, "code": err_code}}


@dataclass
class _State:
    """Everything shared between the test thread and the request-handler threads."""

    api_key: str | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    script: deque[Reply] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    closing: threading.Event = field(default_factory=threading.Event)
    connections: set[socket.socket] = field(default_factory=set)
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    fallback: Callable[[dict[str, Any]], Reply] | None = None
    models: list[str] | None = None  # what GET /v1/models lists; None: no such route (404)


class _Server(ThreadingHTTPServer):
    # Non-daemon handler threads so that server_close() joins them: nothing outlives the fake.
    daemon_threads = False
    block_on_close = True

    def __init__(self, state: _State, handler: type[BaseHTTPRequestHandler]) -> None:
        self.state = state
        super().__init__(("127.0.0.1", 0), handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that went away (timeout, cancelled task) or our own shutdown is not an error.
        if self.state.closing.is_set() or isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class ScriptedHandler(BaseHTTPRequestHandler):
    """HTTP plumbing shared by the scripted fakes: connection tracking, JSON errors, waiting."""

    protocol_version = "HTTP/1.1"
    fake_name = "FakeOpenAI"  # names the fake in its error messages
    timeout = 10  # a connection that never sends its request cannot pin a thread forever
    server: _Server

    # -- plumbing --

    def setup(self) -> None:
        super().setup()
        with self.server.state.lock:
            self.server.state.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.state.lock:
            self.server.state.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        pass  # keep test output clean

    def _send_json(self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode()
        self.close_connection = True
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Connection", "close")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            pass  # the client gave up; nothing to tell it

    def _send_error(self, code: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._send_json(code, _error_body(code, message), headers)

    def _client_gone(self) -> bool:
        """True once the client has closed its end (EOF or reset) of this connection."""
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _wait(self, seconds: float | None) -> bool:
        """Sleep ``seconds`` (None = forever); False if the fake shut down or the client left first."""
        deadline = None if seconds is None else time.monotonic() + seconds
        while True:
            step = _POLL
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return True
                step = min(step, remaining)
            if self.server.state.closing.wait(step) or self._client_gone():
                return False

    def _read_json(self) -> dict[str, Any] | None:
        """The request's JSON object body, recorded; None (after a 400 answer) if it is not one."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("request body is not a JSON object")
        except ValueError as exc:
            self._send_error(400, f"{self.fake_name}: invalid JSON request body: {exc}")
            return None
        return body

    def _record(self, body: dict[str, Any]) -> int:
        """Record `body`; its 1-based arrival number."""
        state = self.server.state
        with state.lock:
            state.requests.append(body)
            return len(state.requests)

    def _next_reply(self) -> Any:
        """The next scripted reply, else the `reply_always` responder's, else None."""
        state = self.server.state
        with state.lock:
            if state.script:
                return state.script.popleft()
            return None if state.fallback is None else Computed(state.fallback)


class _Handler(ScriptedHandler):
    # -- HTTP --

    def do_GET(self) -> None:  # noqa: N802 (stdlib naming)
        state = self.server.state
        if self.path.split("?", 1)[0] != MODELS_PATH or state.models is None:
            self._send_error(404, f"FakeOpenAI: no route GET {self.path}")
        elif state.api_key is not None and self.headers.get("Authorization") != f"Bearer {state.api_key}":
            self._send_error(401, "Incorrect API key provided (FakeOpenAI).")
        else:
            listed = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in state.models]
            self._send_json(200, {"object": "list", "data": listed})

    def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
        if self.path.split("?", 1)[0] != CHAT_PATH:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._send_error(404, f"FakeOpenAI: no route POST {self.path} (only {CHAT_PATH})")
            return
        body = self._read_json()
        if body is None:
            return
        number = self._record(body)
        state = self.server.state
        if state.api_key is not None and self.headers.get("Authorization") != f"Bearer {state.api_key}":
            self._send_error(401, "Incorrect API key provided (FakeOpenAI).")
            return
        reply = self._next_reply()
        if reply is None:
            self._send_error(
                500,
                f"FakeOpenAI: reply script exhausted at request #{number} "
                f"(model={body.get('model')!r}); script more with fake.reply(...)",
                {"x-should-retry": "false"},
            )
            return
        self._answer(reply, body)

    def _answer(self, reply: Reply, body: dict[str, Any]) -> None:
        if isinstance(reply, Computed):
            try:
                reply = reply.fn(body)
            except Exception as exc:  # surface test assertions to the client as a loud 500
                self._send_error(
                    500, f"FakeOpenAI: reply_with callable raised {exc!r}", {"x-should-retry": "false"}
                )
                return
            self._answer(reply, body)
        elif isinstance(reply, Slow):
            if self._wait(reply.seconds):
                self._answer(reply.then, body)
        elif isinstance(reply, Hang):
            self._wait(None)
        elif isinstance(reply, Status):
            headers = {} if reply.retry_after is None else {"Retry-After": format(reply.retry_after, "g")}
            self._send_error(reply.code, reply.message, headers)
        elif isinstance(reply, (Text, ToolCall)):
            self._send_json(200, self._completion(reply, body))
        else:
            raise TypeError(f"FakeOpenAI: not a reply: {reply!r}")

    def _completion(self, reply: Text | ToolCall, body: dict[str, Any]) -> dict[str, Any]:
        n = next(self.server.state.ids)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
        if reply.reasoning is not None:
            message["reasoning_content"] = reply.reasoning
        if isinstance(reply, ToolCall):
            message["tool_calls"] = [
                {
                    "id": f"call_fake_{n}",
                    "type": "function",
                    "function": {"name": reply.name, "arguments": reply.arguments},
                }
            ]
            finish, produced = "tool_calls", (reply.content or "") + reply.name + reply.arguments
        else:
            finish, produced = "stop", reply.content
        prompt_tokens = max(1, len(json.dumps(body.get("messages", []))) // 4)
        completion_tokens = max(1, (len(produced) + len(reply.reasoning or "")) // 4)
        return {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or "fake-model",
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


class ScriptedServer:
    """A local HTTP server answering requests from a script of replies; `handler` speaks the API.

    ``with Fake() as fake:`` starts it on ``127.0.0.1`` (free port); leaving the block
    interrupts pending slow/hanging replies, stops the server and joins every thread it started."""

    handler: type[ScriptedHandler]

    def __init__(self, api_key: str | None = None) -> None:
        self._state = _State(api_key=api_key)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --

    def __enter__(self) -> Self:
        self._server = _Server(self._state, self.handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=type(self).__name__,
            daemon=True,
        )
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving; pending ``slow``/``hang`` replies end without an answer. Idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        self._state.closing.set()
        server.shutdown()
        with self._state.lock:
            open_connections = list(self._state.connections)
        for conn in open_connections:  # unblock any handler still reading from a client
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        server.server_close()  # joins the handler threads
        if self._thread is not None:
            self._thread.join()

    # -- script --

    def reply(self, *replies: Reply) -> None:
        """Append replies to the script; each request consumes the next one, in order."""
        with self._state.lock:
            self._state.script.extend(replies)

    def drop_script(self) -> int:
        """Forget the scripted replies not consumed yet (for a client that retries an unknown
        number of times); how many there were."""
        with self._state.lock:
            dropped = len(self._state.script)
            self._state.script.clear()
            return dropped

    def reply_with(self, fn: Callable[[dict[str, Any]], Reply]) -> None:
        """Append one reply computed from the request body (``fn(body) -> reply``)."""
        self.reply(Computed(fn))

    def reply_always(self, fn: Callable[[dict[str, Any]], Reply]) -> None:
        """Answer every request the script does not cover with ``fn(body)`` (a scripted model)."""
        with self._state.lock:
            self._state.fallback = fn

    # -- observations --

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT`` of the running server."""
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not running; use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_port}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Parsed JSON bodies of every model request so far, in arrival order (a copy)."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def count(self) -> int:
        """Number of model requests received (including failed and retried ones)."""
        with self._state.lock:
            return len(self._state.requests)

    @property
    def pending(self) -> int:
        """Scripted replies not consumed yet (assert ``fake.pending == 0`` to check all were used)."""
        with self._state.lock:
            return len(self._state.script)


class FakeOpenAI(ScriptedServer):
    """A local OpenAI-compatible server answering chat completions from a script of replies.

    If ``api_key`` is given, requests without ``Authorization: Bearer <api_key>`` get a 401
    (recorded and counted, but no scripted reply is consumed)."""

    handler = _Handler

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def list_models(self, models: list[str] | None) -> None:
        """Answer ``GET /v1/models`` with these ids; None (as before any call): the route is absent, 404."""
        self._state.models = None if models is None else list(models)
