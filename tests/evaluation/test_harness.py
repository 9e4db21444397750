"""One case's trouble stays that case's: the run goes on and its report says what happened."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import NoReturn

import pytest

from remem.daemon.evaluation import harness
from remem.daemon.evaluation.cases import CASES, CWD
from remem.daemon.evaluation.formats import DshFormat
from remem.daemon.evaluation.report import Metrics, Report, table
from remem.daemon.home import Home
from remem.daemon.sessions.errors import SessionLogError
from remem.daemon.settings import SettingsStore
from tests.fake_openai import FakeOpenAI
from tests.scripted_model import serve

TOO_LONG = "line 6 is 20972000 bytes; a line may hold at most 16777216"


def test_a_worker_session_that_cannot_be_read_back_fails_its_case(
    user_home: Home, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreadable(path: Path, **_: object) -> NoReturn:
        raise SessionLogError(path, TOO_LONG)

    monkeypatch.setattr(harness, "read_session", unreadable)
    serve(fake, "good")
    settings, _ = SettingsStore(user_home).read()
    [decision] = [case for case in CASES if case.name == "decision"]
    score = asyncio.run(harness.run_case(decision, DshFormat(CWD), settings, user_home))
    assert score.status == "unreadable" and fake.count == 1
    assert score.error == f"its worker session cannot be read back: {TOO_LONG}"
    metrics = Metrics.of([score])
    assert (metrics.recall, metrics.outcome) == (0.0, 0.0)
    report = Report.of("scripted-model", "fake", "scripted", 32768, [score], 1.0)
    assert f"dsh/decision: its worker session cannot be read back: {TOO_LONG}" in table(report)
