"""A stop is acted on at once, at any moment of `remem eval`: the real CLI in its own process group,
signalled as a terminal (its whole group) or `kill` (the process) signals it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI
from tests.interrupting import interrupted_at_import

from .test_cli import _command, _env

pytestmark = pytest.mark.slow  # each test starts `remem eval` several times


def _start(home: Home, temp: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        _command(home, *args), env=_env(TMPDIR=str(temp)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip


def _signal(run: subprocess.Popen[str], stop: signal.Signals) -> None:
    """Ctrl-C and a closed terminal reach the whole foreground group, a `kill` the process alone."""
    if stop == signal.SIGTERM:
        run.send_signal(stop)
    else:
        os.killpg(run.pid, stop)


def _running_with(temp: Path) -> list[int]:
    """The processes still running whose temp dir is `temp`: the run's, whatever their group (an
    exited one may stay a zombie here, where no init reaps orphans)."""
    mine = f"TMPDIR={temp}".encode()
    running = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:  # gone meanwhile, or not ours to read
            continue
        running += [int(pid)] if mine in environ and state != "Z" else []
    return running


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_while_the_long_case_is_written_is_acted_on_at_once(
    user_home: Home, fake: FakeOpenAI, tmp_path: Path, stop: signal.Signals
) -> None:
    """Writing the long case for a 1 MB limit takes seconds; the stop waited for it to end (~15 s)."""
    user_home.settings_file.write_text(user_home.settings_file.read_text().replace("32768", "1000000"))
    temp = tmp_path / "temp"
    temp.mkdir()
    with _start(user_home, temp, "--cases", "dsh/long") as run:
        deadline = time.monotonic() + 60
        while (
            not list(temp.glob("remem-eval-*/probe-*")) and run.poll() is None and time.monotonic() < deadline
        ):
            time.sleep(0.02)  # until the case is being written
        _signal(run, stop)
        signalled = time.monotonic()
        out, err = run.communicate(timeout=60)  # a hang guard; the speed is asserted below
    assert time.monotonic() - signalled < 2, "the stop waited for the case to be written"  # ~0.1 s
    assert (run.returncode, out, err) == (
        128 + stop,
        "",
        "remem: interrupted after 0 of 1 case(s); no report\n",
    )
    assert fake.count == 0
    assert not list(temp.iterdir()), "the half-written case is deleted"
    assert not _running_with(temp), "nothing goes on writing it"


@pytest.mark.parametrize(
    ("module", "said"),
    [
        ("remem.daemon.settings", "before any case ran"),  # the first thing `remem eval` does
        ("remem.daemon.evaluation.harness", "after 0 of 1 case(s)"),  # as the first case starts
    ],
)
def test_ctrl_c_exits_130_before_the_cases_run_too(
    user_home: Home, fake: FakeOpenAI, module: str, said: str
) -> None:
    """Both were imported with the command, inside Click, which made a Ctrl-C "Aborted!", exit 1."""
    # What follows `python -m remem.daemon`:
    command = interrupted_at_import(module, *_command(user_home, "--cases", "dsh/decision")[3:])
    done = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", f"remem: interrupted {said}; no report\n")
    assert fake.count == 0
