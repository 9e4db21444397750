"""An attempt ends in a receipt whatever the provider answers or remem does wrong, and its worker
session stays whole when a cancel or the timeout lands while a step is being written."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.consolidation import worker
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.consolidation.worker_log import worker_log_path
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import ConsolidationResult, Receipt, Status
from remem.daemon.sessions import writer
from remem.daemon.sessions.reader import read_session
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import KEY_ENV, Source, configure, proposal, put, write_source
from .provider_failures import RawAnswers, chat_answer, configure_provider


def _consolidate(home: Home, session_id: str) -> ConsolidationResult:
    return asyncio.run(Consolidator(home).consolidate(session_id, lambda phase, data: None))


def _receipt(home: Home, result: ConsolidationResult) -> Receipt:
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None and receipt.attempt is not None
    return receipt


def _worker_events(home: Home, receipt: Receipt) -> list[str]:
    assert receipt.attempt is not None
    path = worker_log_path(home, receipt.attempt.workerSession or "")
    assert path is not None
    return [e.type for e in read_session(path).events]


def _calls(*calls: Any) -> bytes:
    return chat_answer({"tool_calls": list(calls)})


_FUNCTION = {"name": "memory_review_propose", "arguments": "{}"}
MALFORMED = {
    "function-null": (_calls({"id": "c1", "type": "function", "function": None}), "has no string id"),
    "name-a-number": (
        _calls({"id": "c1", "type": "function", "function": {**_FUNCTION, "name": 7}}),
        "has no string id, name or arguments",
    ),
    "arguments-an-object": (
        _calls({"id": "c1", "type": "function", "function": {**_FUNCTION, "arguments": {}}}),
        "has no string id, name or arguments",
    ),
    "no-call-id": (_calls({"type": "function", "function": _FUNCTION}), "has no string id"),
    "tool-calls-a-string": (chat_answer({"tool_calls": "oops"}), "tool_calls is not a list"),
    "a-tool-call-a-string": (_calls("oops"), "a tool call in the answer is not an object"),
    "content-a-list": (chat_answer({"content": ["hi"]}), "the answer's content is not text"),
    "reasoning-a-number": (
        chat_answer({"content": "hi", "reasoning_content": 1}),
        "reasoning_content is not text",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_completion_fails_the_attempt_instead_of_the_request(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    body, why = MALFORMED[case]
    with RawAnswers("application/json", body) as raw:
        root = tmp_path / "dsh-sessions"
        configure_provider(home, f"{raw.origin}/v1", root)
        session = write_source(root, str(tmp_path / "project"))
        result = _consolidate(home, session.id)
        assert raw.count == 1, "a malformed answer is not retried"
    receipt = _receipt(home, result)
    assert result.status is receipt.status is Status.PROVIDER_FAILED
    assert why in (receipt.attempts[-1].error or "")
    assert _worker_events(home, receipt)[-1] == "turn/end"


@pytest.mark.parametrize("usage", ["lots", {}, {"prompt_tokens": 3}], ids=["a string", "empty", "one count"])
def test_token_counts_of_another_shape_are_unknown_and_the_attempt_goes_on(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, usage: object
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with RawAnswers("application/json", chat_answer({"content": "hi"}, usage=usage)) as raw:
        root = tmp_path / "dsh-sessions"
        configure_provider(home, f"{raw.origin}/v1", root)
        session = write_source(root, str(tmp_path / "project"))
        result = _consolidate(home, session.id)
        assert raw.count > 1, "each step was answered and the model asked again"
    receipt = _receipt(home, result)
    assert result.status is receipt.status is Status.INVALID_PROPOSAL  # it never called the tool
    assert _worker_events(home, receipt)[-1] == "turn/end"


def test_a_well_formed_answer_with_usage_still_commits(home: Home, fake: FakeOpenAI, source: Source) -> None:
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    assert _consolidate(home, source.id).status is Status.COMMITTED


def test_a_fault_inside_the_attempt_ends_it_internal_error_without_its_message(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any) -> Any:
        raise RuntimeError("the model said sk-live-secret")

    monkeypatch.setattr(worker, "_check", broken)
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    result = _consolidate(home, source.id)
    receipt = _receipt(home, result)
    assert result.status is receipt.status is Status.INTERNAL_ERROR, "no receipt is left running"
    error = receipt.attempts[-1].error or ""
    assert "RuntimeError" in error and "secret" not in error
    assert _worker_events(home, receipt)[-1] == "turn/end"


_ONE_WHOLE_STEP = ["step/start", "assistant/message", "tool/call", "tool/result", "step/end", "turn/end"]


def _hold_the_first_append(monkeypatch: pytest.MonkeyPatch, hold: threading.Event) -> threading.Event:
    """Holds the first append after the worker session exists (its first step) between its two
    writes until `hold` is set; returns the event set once it is held there."""
    entered = threading.Event()
    real = writer.faultpoint

    def held(name: str) -> None:
        real(name)
        if name == "sessions.writer.mid-append" and not entered.is_set():
            entered.set()
            hold.wait(10)

    monkeypatch.setattr(writer, "faultpoint", held)
    return entered


def test_a_cancel_during_a_step_append_keeps_the_worker_session_whole(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    go = threading.Event()
    entered = _hold_the_first_append(monkeypatch, go)
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()), final=False)))

    async def cancel_mid_step() -> ConsolidationResult:
        running = asyncio.create_task(Consolidator(home).consolidate(source.id, lambda p, d: None))
        await asyncio.to_thread(entered.wait, 10)
        running.cancel()
        await asyncio.sleep(0.3)  # the old code wrote the end now, beside the held step
        go.set()
        return await running

    result = asyncio.run(cancel_mid_step())
    receipt = _receipt(home, result)
    assert result.status is Status.CANCELLED
    events = _worker_events(home, receipt)
    assert events[-6:] == _ONE_WHOLE_STEP, events


def test_a_timeout_during_a_step_append_keeps_the_worker_session_whole(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(home, fake, source.path.parents[2], timeout_seconds=1)
    go = threading.Event()
    entered = _hold_the_first_append(monkeypatch, go)
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()), final=False)))

    def release_after_the_timeout() -> None:
        entered.wait(10)
        time.sleep(1.3)
        go.set()

    releaser = threading.Thread(target=release_after_the_timeout)
    releaser.start()
    result = _consolidate(home, source.id)
    releaser.join()
    receipt = _receipt(home, result)
    assert result.status is Status.PROVIDER_FAILED and "no final proposal within 1 s" in (
        receipt.attempts[-1].error or ""
    )
    events = _worker_events(home, receipt)
    assert events[-6:] == _ONE_WHOLE_STEP, events
