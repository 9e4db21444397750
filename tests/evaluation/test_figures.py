"""A case's figures say what was spent, also when the case failed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import NoReturn

import pytest

from remem.daemon.evaluation import harness
from remem.daemon.evaluation.cases import CASES, CWD
from remem.daemon.evaluation.formats import DshFormat
from remem.daemon.home import Home
from remem.daemon.sessions.errors import SessionLogError
from remem.daemon.settings import SettingsStore
from tests.fake_openai import FakeOpenAI, slow
from tests.scripted_model import answer

MODEL_SECONDS = 0.5


def test_an_unreadable_worker_session_still_shows_how_long_its_review_ran(
    user_home: Home, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It showed 0.00 s, as if no review had run."""

    def unreadable(path: Path, **_: object) -> NoReturn:
        raise SessionLogError(path, "line 4 is not JSON")

    monkeypatch.setattr(harness, "read_session", unreadable)
    fake.reply_always(lambda body: slow(MODEL_SECONDS, answer("good", body)))
    settings, _ = SettingsStore(user_home).read()
    [decision] = [case for case in CASES if case.name == "decision"]
    score = asyncio.run(harness.run_case(decision, DshFormat(CWD), settings, user_home))
    assert score.status == "unreadable" and score.seconds >= MODEL_SECONDS
