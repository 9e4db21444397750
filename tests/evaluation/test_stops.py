"""A stop is acted on at once, at any moment of `remem eval`: the real CLI in its own process group,
signalled as a terminal (its whole group) or `kill` (the process) signals it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI
from tests.interrupting import interrupted_at_import
from tests.waiting import wait_until

from .eval_command import eval_command, eval_env

pytestmark = pytest.mark.slow  # each test starts `remem eval` several times

HANG_SECONDS = 60  # a bound on a hang, never a measure of speed


def _start(home: Home, temp: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        eval_command(home, *args), env=eval_env(TMPDIR=str(temp)), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
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


def _writer(temp: Path) -> int | None:
    """The child process writing the padded case, while it runs."""
    for pid in _running_with(temp):
        try:
            if b"_write_for_parent" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except OSError:  # gone meanwhile
            continue
    return None


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_while_the_long_case_is_written_is_acted_on_at_once(
    user_home: Home, fake: FakeOpenAI, tmp_path: Path, stop: signal.Signals
) -> None:
    """Writing the long case for a 1 MB limit takes seconds; the stop waited for it to end (~15 s).
    The writer is frozen before the stop, so a run that waits for the write never ends: the
    outcome, not the machine's speed, tells a stop acted on from one that waited."""
    user_home.settings_file.write_text(user_home.settings_file.read_text().replace("32768", "1000000"))
    temp = tmp_path / "temp"
    temp.mkdir()
    with _start(user_home, temp, "--cases", "dsh/long") as run:
        try:
            wait_until(
                lambda: _writer(temp) is not None or run.poll() is not None,
                what="the long case's writer to start", seen=lambda: list(temp.rglob("*")),
            )  # fmt: skip
            writer = _writer(temp)
            assert writer is not None, f"the run ended before writing the case: {run.communicate()}"
            os.kill(writer, signal.SIGSTOP)
            _signal(run, stop)
            out, err = run.communicate(timeout=HANG_SECONDS)
        except subprocess.TimeoutExpired:
            pytest.fail(f"remem eval went on after {stop.name} while its case was being written")
        finally:
            left = _running_with(temp)
            for pid in left:  # a run that did not stop, or a writer left frozen
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    assert (run.returncode, out, err) == (
        128 + stop,
        "",
        "remem: interrupted after 0 of 1 case(s); no report\n",
    )
    assert fake.count == 0
    assert not list(temp.iterdir()), "the half-written case is deleted"
    assert not left, "nothing goes on writing it"


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
    command = interrupted_at_import(module, *eval_command(user_home, "--cases", "dsh/decision")[3:])
    done = subprocess.run(command, env=eval_env(), capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", f"remem: interrupted {said}; no report\n")
    assert fake.count == 0
