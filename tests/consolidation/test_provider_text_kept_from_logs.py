"""What a provider says may quote the request, and so the session: the debug log and the daemon's
log identify a failed attempt without any of it (class, HTTP status, the error's type and code,
the URL asked), while the receipt, which the user reads, keeps the provider's reason, redacted
and cut short (decision 0373)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.consolidation.evidence import project_evidence
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from remem.daemon.sessions.reader import read_session
from tests.fake_openai import Computed, FakeOpenAI, Reply, status

from .conftest import KEY_ENV, Source, configure, write_source
from .provider_failures import RawAnswers

MARKER = "Quoted-from-the-session marker 7d1c"


def first_prompt(source: Source) -> str:
    """The session's first prompt, which the request to the model holds."""
    return project_evidence(read_session(source.path)).turns[0].user[0]


def quoting(prompt: str) -> Reply:
    """A 400 whose message quotes `prompt` from the request, as providers' "Invalid prompt"
    answers quote what they refused."""

    def refuse(request: dict[str, Any]) -> Reply:
        context = request["messages"][1]["content"]
        assert prompt in context, "the prompt was sent"
        return status(400, f"Invalid prompt: your prompt was flagged as potentially violating: {prompt!r}")

    return Computed(refuse)


def run(home: Home, session_id: str) -> tuple[Status, str, str]:
    """Consolidate in this process: the status, the attempt's error in the receipt, and the
    attempt's debug log."""
    result = asyncio.run(Consolidator(home).consolidate(session_id, lambda phase, data: None))
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None
    debug = home.debug / result.review / f"attempt-{result.attempt}.jsonl"
    return result.status, receipt.attempts[-1].error or "", debug.read_text()


def raw_route(home: Home, raw: RawAnswers, tmp_path: Path) -> Source:
    """Settings asking `raw` for consolidation, the debug log on; a finished session."""
    root = tmp_path / "dsh-sessions"
    home.ensure_layout()
    home.settings_file.write_text(
        "consolidation:\n  provider: fake\n  model: fake-model\n  debug: true\n"
        f"providers:\n  fake:\n    base_url: {raw.origin}/v1\n    api_key_env: {KEY_ENV}\n"
        f"sessions:\n  roots: [{str(root)!r}]\n"
    )
    return write_source(root, str(tmp_path / "project"))


def failed_line(debug: str) -> dict[str, Any]:
    lines = [json.loads(line) for line in debug.splitlines()]
    return next(line for line in lines if line["phase"] == "attempt-failed")


def test_a_400_quoting_the_session_reaches_the_receipt_but_no_log(
    home: Home, fake: FakeOpenAI, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root, debug="true")
    source = write_source(root, str(tmp_path / "project"))
    prompt = first_prompt(source)
    fake.reply(quoting(prompt))
    state, error, debug = run(home, source.id)
    assert state is Status.PROVIDER_FAILED and fake.count == 1, "a 400 is not retried"
    assert prompt not in debug and prompt not in caplog.text and "Invalid prompt" not in caplog.text
    cause = f"BadRequestError, HTTP 400, type invalid_request_error (asked {fake.base_url})"
    assert failed_line(debug)["error"] == cause
    assert cause in caplog.text, "the daemon's log says which attempt failed, and how"
    assert error.startswith(f"the provider refused the request (HTTP 400 bad request, asked {fake.base_url})")
    assert "(remem settings model) — Invalid prompt" in error and prompt in error, "the user reads the reason"


def test_a_text_answer_is_quoted_to_the_user_but_no_log(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with RawAnswers("text/html", f"<html>{MARKER}</html>".encode()) as raw:
        source = raw_route(home, raw, tmp_path)
        state, error, debug = run(home, source.id)
        url = f"{raw.origin}/v1"
    assert state is Status.PROVIDER_FAILED and MARKER in error, "the user reads what it began with"
    assert MARKER not in debug and MARKER not in caplog.text
    assert failed_line(debug)["error"] == f"the answer is text, not a chat completion (asked {url})"


def test_a_finish_reason_that_is_no_identifier_is_not_logged(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    choice = {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": MARKER}
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
    with RawAnswers("application/json", json.dumps(body).encode()) as raw:
        source = raw_route(home, raw, tmp_path)
        state, _, debug = run(home, source.id)
    assert state is Status.INVALID_PROPOSAL, "the attempt went on, answered each time"
    answers = [json.loads(line) for line in debug.splitlines() if '"model-answer"' in line]
    assert answers and all(line.get("finish") is None for line in answers)
    assert MARKER not in debug
