"""A provider that fails a consolidation in tests: one answering every call with raw bytes (or
a chat completion made of parts), the settings that route to it, and the failed attempt as its
receipt and the daemon's log tell it."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from tests.fake_openai import ScriptedHandler, ScriptedServer

from .conftest import KEY_ENV, write_source


class _RawHandler(ScriptedHandler):
    """Answers every POST 200 with `answer`, its content type and body, whatever they are."""

    fake_name = "RawAnswers"
    answer: tuple[str, bytes]

    def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._record({})
        content_type, body = self.answer
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class RawAnswers(ScriptedServer):
    """A provider whose every chat completion is answered 200 with `body`, as `content_type`."""

    def __init__(self, content_type: str, body: bytes) -> None:
        super().__init__()
        self.handler = type("Handler", (_RawHandler,), {"answer": (content_type, body)})


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
