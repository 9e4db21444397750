"""One case's trouble stays that case's: the run goes on and its report says what happened."""

from __future__ import annotations

import pytest

from remem.daemon.evaluation import harness
from remem.daemon.evaluation.report import Metrics, Report, table
from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI

from .conftest import decision_read_as_broken

TOO_LONG = "line 6 is 20972000 bytes; a line may hold at most 16777216"


def test_a_worker_session_that_cannot_be_read_back_fails_its_case(
    user_home: Home, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    score = decision_read_as_broken(user_home, fake, monkeypatch, harness, TOO_LONG)
    assert score.status == "unreadable" and fake.count == 1
    assert score.error == f"its worker session cannot be read back: {TOO_LONG}"
    metrics = Metrics.of([score])
    assert (metrics.recall, metrics.outcome) == (0.0, 0.0)
    report = Report.of("scripted-model", "fake", "scripted", 32768, [score], 1.0)
    assert f"dsh/decision: its worker session cannot be read back: {TOO_LONG}" in table(report)
