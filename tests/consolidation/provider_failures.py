"""A provider that fails a consolidation in tests: one answering every call with raw bytes (or
a chat completion made of parts), the settings that route to it, and the failed attempt as its
receipt and the daemon's log tell it."""

from __future__ import annotations

import asyncio
import json
import logging
import zlib
from pathlib import Path
from typing import Any

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from tests.fake_openai import ScriptedHandler, ScriptedServer

from .conftest import KEY_ENV, write_source


class _RawHandler(ScriptedHandler):
    """Answers every POST 200 with `answer`, its content type and body, whatever they are, said
    to be in `encoding` when it is not None."""

    fake_name = "RawAnswers"
    answer: tuple[str, bytes]
    encoding: str | None

    def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._record({})
        content_type, body = self.answer
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        if self.encoding is not None:
            self.send_header("Content-Encoding", self.encoding)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class RawAnswers(ScriptedServer):
    """A provider whose every chat completion is answered 200 with `body`, as `content_type`
    (and in `encoding`, such as gzip)."""

    def __init__(self, content_type: str, body: bytes, encoding: str | None = None) -> None:
        super().__init__()
        answer = {"answer": (content_type, body), "encoding": encoding}
        self.handler = type("Handler", (_RawHandler,), answer)


class _HugeHandler(ScriptedHandler):
    """Answers every POST 200 with a chat completion of over `total` bytes, sent a piece at a time
    (chunked, or after a Content-Length), until it is all sent or the client closes; `sent`
    holds the body bytes each answer got out."""

    fake_name = "HugeAnswers"
    total: int
    chunked: bool
    sent: list[int]

    def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._record({})
        head, tail = chat_answer({"content": "\0"}).split(b"\\u0000")
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        piece = b"x" * (1 << 16)
        pieces = [head, *[piece] * (self.total // len(piece)), tail]
        if self.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(sum(map(len, pieces))))
        self.end_headers()
        sent = 0
        try:
            for part in pieces:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part) if self.chunked else part)
                sent += len(part)
            if self.chunked:
                self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client closed its end: what it read is what was sent
            pass
        self.sent.append(sent)


class HugeAnswers(ScriptedServer):
    """A provider (a broken proxy) whose every chat completion is over `total` bytes of body."""

    def __init__(self, total: int, *, chunked: bool) -> None:
        super().__init__()
        self.sent: list[int] = []
        self.handler = type(
            "Handler", (_HugeHandler,), {"total": total, "chunked": chunked, "sent": self.sent}
        )


class _BombHandler(ScriptedHandler):
    """Answers every POST 200 with the start of a gzip chat completion whose text decodes to
    `total` bytes, a few KB sent, then sends nothing more until the client closes or the
    handler's timeout ends the wait; `closed` holds, for each answer, whether the client closed."""

    fake_name = "GzipBomb"
    total: int
    closed: list[bool]

    def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._record({})
        head, _ = chat_answer({"content": "\0"}).split(b"\\u0000")
        packer = zlib.compressobj(wbits=zlib.MAX_WBITS | 16)  # gzip
        # A sync flush: the client can decode all of it, and waits for the rest.
        sent = packer.compress(head) + packer.compress(b"x" * self.total) + packer.flush(zlib.Z_SYNC_FLUSH)
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(sent), sent))
        try:
            self.closed.append(self.rfile.read(1) == b"")
        except TimeoutError:  # the client still waits for the rest
            self.closed.append(False)
        except OSError:  # reset, with what was sent still unread: closed as well
            self.closed.append(True)


class GzipBomb(ScriptedServer):
    """A provider (a broken proxy) whose every chat completion is a few KB of gzip that decodes
    to over `total` bytes, the rest of it held back until the client gives up."""

    def __init__(self, total: int) -> None:
        super().__init__()
        self.closed: list[bool] = []
        self.handler = type("Handler", (_BombHandler,), {"total": total, "closed": self.closed})


def configure_provider(home: Home, base_url: str, root: Path, provider_limit: int | None = None) -> None:
    home.ensure_layout()
    limit = "" if provider_limit is None else f"    max_output_tokens: {provider_limit}\n"
    home.settings_file.write_text(
        "consolidation:\n  provider: fake\n  model: fake-model\n"
        f"providers:\n  fake:\n    base_url: {base_url!r}\n    api_key_env: {KEY_ENV}\n{limit}"
        f"sessions:\n  roots: [{str(root)!r}]\n"
    )


def failed_with(home: Home, tmp_path: Path, base_url: str) -> str:
    root = tmp_path / "dsh-sessions"
    configure_provider(home, base_url, root)
    source = write_source(root, str(tmp_path / "project"))
    result = asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None))
    receipt = ReceiptStore(home).read(result.review)
    assert result.status is Status.PROVIDER_FAILED and receipt is not None
    assert receipt.status is Status.PROVIDER_FAILED, "the receipt does not stay running"
    return receipt.attempts[0].error or ""


def chat_answer(message: dict[str, Any], **fields: Any) -> bytes:
    choice = {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", **message}}
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "usage": None}
    return json.dumps({**body, "choices": [choice], **fields}).encode()


class _Causes(logging.Handler):
    """What the daemon's log says of each failed attempt, after `ended <status>: `."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.said: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if " ended " in record.msg:
            self.said.append(record.getMessage().split(": ", 1)[1])


def failed_attempt(home: Home, session_id: str, expected: Status) -> tuple[str, list[str]]:
    """The receipt's error and the causes the daemon's log was given, of an attempt that failed."""
    causes, daemon = _Causes(), logging.getLogger("remem.daemon")
    # `setLevel`, not the attribute: it clears what `isEnabledFor` remembers of an earlier level.
    level = daemon.level
    daemon.setLevel(logging.INFO)
    daemon.addHandler(causes)
    try:
        result = asyncio.run(Consolidator(home).consolidate(session_id, lambda phase, data: None))
    finally:
        daemon.removeHandler(causes)
        daemon.setLevel(level)
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None and result.status is receipt.status is expected
    return receipt.attempts[-1].error or "", causes.said
