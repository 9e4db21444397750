"""`remem eval` whose terminal closes while a case runs ends 129, the case's home deleted,
though the line saying so can no longer be written there (every write after the hangup fails,
EIO): it ended "the output could not be written", exit 1, hiding the stop (decision 0540)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI, hang
from tests.terminal import in_a_terminal
from tests.waiting import wait_until

from .eval_command import eval_command, eval_env

pytestmark = pytest.mark.slow  # the real CLI in its own process


def test_a_closed_terminal_ends_eval_129_with_its_cases_home_deleted(
    user_home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.reply_always(lambda body: hang())
    temp = tmp_path / "temp"
    temp.mkdir()
    command = eval_command(user_home, "--cases", "dsh/decision")
    running, master = in_a_terminal(command, env=eval_env(TMPDIR=str(temp)))
    with running:
        wait_until(lambda: fake.count == 1 or running.poll() is not None, what="the case to ask the model")
        os.close(master)  # the terminal closes: SIGHUP, then every write to it fails (EIO)
        running.wait(timeout=60)  # a hang guard, not a speed assertion
    assert running.returncode == 129
    assert not list(temp.glob("remem-eval-*")), "the case's private home is deleted"
