"""A second Ctrl-C, pressed while `remem eval` deletes a case's private home after the first, is
no reason to leave that home (a copy of the evaluated settings, the worker's log) behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI, hang

from .eval_command import eval_command, eval_env

pytestmark = pytest.mark.slow  # the real CLI in its own process

# `remem ARGS...`, Ctrl-C pressed again as the first private home starts being deleted: a moment
# no timing can hit reliably. The deletion goes on as it would.
SECOND_CTRL_C_AT_CLEANUP = """
import os, shutil, signal, sys

delete = shutil.rmtree

def pressed_again(path, *args, **kwargs):
    if os.path.basename(path).startswith("remem-eval-"):
        os.kill(os.getpid(), signal.SIGINT)
    return delete(path, *args, **kwargs)

shutil.rmtree = pressed_again
from remem.daemon.cli import main
main()
"""


def test_a_second_ctrl_c_does_not_stop_the_private_home_being_deleted(
    user_home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.reply_always(lambda body: hang())
    temp = tmp_path / "temp"
    temp.mkdir()
    command = [
        sys.executable,
        "-c",
        SECOND_CTRL_C_AT_CLEANUP,
        *eval_command(user_home, "--cases", "dsh/decision")[3:],
    ]
    with subprocess.Popen(command, env=eval_env(TMPDIR=str(temp)), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as run:  # fmt: skip
        deadline = time.monotonic() + 60
        while fake.count == 0 and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # until the case waits on the model
        assert fake.count == 1, "the case never asked the model"
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=60)  # a hang guard, not a speed assertion
    assert not list(temp.iterdir()), "the private home is deleted whole"
    assert (run.returncode, out, err) == (130, "", "remem: interrupted after 0 of 1 case(s); no report\n")
