"""`remem eval` on a full disk: each case says it could not be made, and the run still reports."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
from collections.abc import Callable

import pytest

from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI

from .eval_command import eval_command, eval_env

pytestmark = pytest.mark.slow  # `remem eval` in a process of its own


def _files_limited_to(size: int) -> Callable[[], None]:
    """A disk as full as `size` bytes per file: writes past it fail with EFBIG, as ENOSPC would."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills the writer
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


@pytest.mark.parametrize(
    ("size", "said"),
    [
        (0, "its private home cannot be made: "),  # no temporary folder takes a file
        (100, "its private home cannot be written: "),  # the folder, not the home's settings
    ],
)
def test_a_case_whose_home_cannot_be_written_is_graded_not_a_crash(
    user_home: Home, fake: FakeOpenAI, size: int, said: str
) -> None:
    """It was an internal error ("a bug in remem"), exit 4, and no report. Now the report is
    printed and the run exits 1: a case graded unreadable ended before the model decided it,
    and a run that did not measure the model does not pass (decision 0452)."""
    done = subprocess.run(
        eval_command(user_home, "--cases", "dsh/decision", "--json"), env=eval_env(), capture_output=True,
        text=True, timeout=120, preexec_fn=_files_limited_to(size),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    [case] = report["cases"]
    assert case["score"]["status"] == "unreadable" and case["score"]["error"].startswith(said)
    assert report["totals"]["undecided"] == 1 and fake.count == 0
