"""`remem eval` run in a process that goes on after it (a test, a tool embedding the CLI) leaves
that process's stop handlers as it found them: it hears SIGINT, SIGTERM and SIGHUP only while
its cases run. The loop's were left behind, each signal at its default, so a later SIGTERM
killed the process its own handler was meant to shut down."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from types import FrameType

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI
from tests.scripted_model import serve

from .conftest import KEY_ENV

STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _own(signum: int, frame: FrameType | None) -> None:
    """The embedding process's own handler."""


@pytest.fixture
def own_handlers() -> Iterator[None]:
    before = {stop: signal.signal(stop, _own) for stop in STOPS}
    yield
    for stop, handler in before.items():
        signal.signal(stop, handler)


def test_eval_in_process_gives_back_the_stop_handlers_it_found(
    user_home: Home, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, own_handlers: None
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    serve(fake, "good")
    home = ["--home", str(user_home.root), "--no-daemon"]
    done = CliRunner().invoke(cli, [*home, "eval", "--cases", "dsh/decision", "--json"])
    assert done.exit_code == 0, done.output
    assert {stop: signal.getsignal(stop) for stop in STOPS} == dict.fromkeys(STOPS, _own)
