"""A step's token counts are recorded only when they are counts: an int, not a bool, from 0 to
below 2**53; anything else is recorded as unknown (no `usage`), and the attempt goes on."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from remem.daemon.consolidation.proposal import TOOL_NAME
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.consolidation.worker_log import worker_log_path
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from remem.daemon.sessions.reader import read_session

from .conftest import KEY_ENV, proposal, put, write_source
from .provider_failures import RawAnswers, chat_answer, configure_provider


def _recorded_usage(home: Home, tmp_path: Path, usage: object) -> object:
    """The `usage` the worker session records of a final proposal answered with `usage`."""
    root = tmp_path / "dsh-sessions"
    source = write_source(root, str(tmp_path / "project"))
    arguments = json.dumps(proposal(put("prefer-uv", source.evidence())))
    call = {"id": "c1", "type": "function", "function": {"name": TOOL_NAME, "arguments": arguments}}
    with RawAnswers("application/json", chat_answer({"tool_calls": [call]}, usage=usage)) as raw:
        configure_provider(home, f"{raw.origin}/v1", root)
        result = asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None))
    assert result.status is Status.COMMITTED, "counts of another shape fail nothing"
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None and receipt.attempt is not None
    path = worker_log_path(home, receipt.attempt.workerSession or "")
    assert path is not None
    [step] = [e.data for e in read_session(path).events if e.type == "assistant/message"]
    return step.get("usage")


NOT_COUNTS = {
    "negative": {"prompt_tokens": -5000, "completion_tokens": -1},
    "booleans": {"prompt_tokens": True, "completion_tokens": False},
    "past-2**53": {"prompt_tokens": 10**23, "completion_tokens": 1},
    "one-negative": {"prompt_tokens": 12, "completion_tokens": -1},
}


@pytest.mark.parametrize("case", sorted(NOT_COUNTS))
def test_token_counts_that_are_no_counts_are_recorded_as_unknown(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    assert _recorded_usage(home, tmp_path, NOT_COUNTS[case]) is None


def test_token_counts_are_recorded_from_zero_to_below_2_53(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    usage = {"prompt_tokens": 2**53 - 1, "completion_tokens": 0}
    assert _recorded_usage(home, tmp_path, usage) == {"inputTokens": 2**53 - 1, "outputTokens": 0}
