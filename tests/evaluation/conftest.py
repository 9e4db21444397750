"""A user home whose consolidation route is the scripted model, served over HTTP by FakeOpenAI."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

from remem.daemon.evaluation.cases import CASES, CWD
from remem.daemon.evaluation.formats import DshFormat
from remem.daemon.evaluation.harness import run_case
from remem.daemon.evaluation.scoring import CaseScore
from remem.daemon.home import Home
from remem.daemon.sessions.errors import SessionLogError
from remem.daemon.settings import SettingsStore
from tests.consolidation.conftest import KEY_ENV, fake
from tests.fake_openai import FakeOpenAI
from tests.scripted_model import serve

__all__ = ["KEY_ENV", "fake"]  # the consolidation tests' fake model server and its key


@pytest.fixture
def user_home(tmp_path: Path, fake: FakeOpenAI) -> Home:
    home = Home(tmp_path / "user-home").ensure_layout()
    home.settings_file.write_text(
        "consolidation:\n  provider: fake\n  model: scripted\n  max_input_bytes: 32768\n"
        f"providers:\n  fake:\n    base_url: {fake.base_url}\n    api_key_env: {KEY_ENV}\n"
    )
    return home


def run_all(home: Home) -> list[CaseScore]:
    settings, _ = SettingsStore(home).read()

    async def every_case() -> list[CaseScore]:
        return [await run_case(case, DshFormat(CWD), settings, home) for case in CASES]

    return asyncio.run(every_case())


def decision_read_as_broken(
    home: Home, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, reader: ModuleType, reason: str
) -> CaseScore:
    """The `decision` case run with the good scripted model, each session `reader` reads back
    refused as broken for `reason`."""

    def unreadable(path: Path, **_: object) -> NoReturn:
        raise SessionLogError(path, reason)

    monkeypatch.setattr(reader, "read_session", unreadable)
    serve(fake, "good")
    settings, _ = SettingsStore(home).read()
    [decision] = [case for case in CASES if case.name == "decision"]
    return asyncio.run(run_case(decision, DshFormat(CWD), settings, home))
