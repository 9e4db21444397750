"""What the two streaming fakes share: one scripted POST route whose replies stream as SSE.

A request to the route is recorded and consumes the next scripted reply: a `Computed` one is
chosen from the body, `status` answers an HTTP error, `hang` never answers (until the harness
gives up or the fake closes), and anything else is the subclass's to stream. An exhausted
script answers 500, so an unexpected model call fails loudly.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

from tests.fake_openai import Computed, Hang, ScriptedHandler, Status


class StreamingHandler(ScriptedHandler):
    route: ClassVar[str]
    replies: ClassVar[tuple[type, ...]]  # the reply types `stream` understands

    def do_GET(self) -> None:  # noqa: N802 (stdlib naming)
        self._send_error(404, f"{self.fake_name}: no route GET {self.path}")

    def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
        if self.path.split("?", 1)[0] != self.route:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._send_error(404, f"{self.fake_name}: no route POST {self.path}")
            return
        body = self._read_json()
        if body is None:
            return
        number = self._record(body)
        reply = self._next_reply()
        while isinstance(reply, Computed):
            reply = reply.fn(body)
        if reply is None:
            self._send_error(500, f"{self.fake_name}: reply script exhausted at request #{number}")
        elif isinstance(reply, Status):
            self._send_error(reply.code, reply.message)
        elif isinstance(reply, Hang):
            self._wait(None)
        elif isinstance(reply, self.replies):
            self._start_stream()
            try:
                for event in self.events(reply, body, number):
                    self.wfile.write(event)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the harness gave up on the stream
        else:
            raise TypeError(f"{self.fake_name}: not a reply: {reply!r}")

    def _start_stream(self) -> None:
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

    @abstractmethod
    def events(self, reply: Any, body: dict[str, Any], number: int) -> Iterator[bytes]:
        """The server-sent events answering `body` (request `number`) with `reply`."""
