"""Stops that reach `remem consolidate` once its end is decided change neither its line nor its
status; a stop that cancels a review the daemon had not yet begun says so, and one whose
daemon died starts none to cancel it.

A stop while the interpreter exited, after the command had given its handlers back (or once
Python reset them as it ends), killed it outright: -15 to its parent, where a script read the
command's own status a moment before. A stop while a refusal was being said replaced it with
"remem: interrupted", 130: the user never learnt why the review was refused (decision 0546)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.cli.output import EXIT_INVALID
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.consolidation.conftest import KEY_ENV, Source, gated, proposal, put
from tests.fake_openai import FakeOpenAI, slow, tool_call
from tests.scratch import hooked_pythonpath
from tests.stop_helpers import drained, ended, fill, none_pending, writing_to
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

GATE_ENV = "REMEM_TEST_EXIT_GATE"
STUCK_ENV = "REMEM_TEST_STUCK_DAEMON"

# `remem consolidate` held as the interpreter exits (its atexit callbacks run last to first, so
# this one, registered at the start, runs after the command's), until the test writes to the
# pipe whose reading end `GATE_ENV` names. Only the command: the daemon it starts inherits this.
_HELD_AT_EXIT = f"""
import atexit, os, sys


def _held():
    if "consolidate" in sys.argv and "{GATE_ENV}" in os.environ:
        os.write(2, b"held at exit\\n")
        os.read(int(os.environ["{GATE_ENV}"]), 1)


atexit.register(_held)
"""


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, int]]:
    """A pipe whose reading end a held command waits on, its number in `GATE_ENV`."""
    read, write = os.pipe()
    monkeypatch.setenv("PYTHONPATH", hooked_pythonpath(_HELD_AT_EXIT, "remem-held-at-exit-"))
    monkeypatch.setenv(GATE_ENV, str(read))
    yield read, write
    os.close(read)
    os.close(write)


@pytest.mark.parametrize("where", [["--no-daemon"], []], ids=["in-process", "through-the-daemon"])
def test_stops_while_the_stopped_command_exits_leave_its_status(
    home: Home,
    fake: FakeOpenAI,
    source: Source,
    gate: tuple[int, int],
    where: list[str],
    request: pytest.FixtureRequest,
) -> None:
    if not where:
        request.getfixturevalue("served")
    fake.reply(slow(8, tool_call(proposal(put("prefer-uv", source.evidence())))))
    running = _started(home, [*where, "consolidate", source.id], pass_fds=(gate[0],))
    try:
        _read_until(running, "waiting for the model")
        running.send_signal(signal.SIGINT)  # the first stop: the review is cancelled
        _read_until(running, "held at exit")
        for stop in (signal.SIGTERM, signal.SIGHUP):  # a kill and a closed terminal, too late
            running.send_signal(stop)
        os.write(gate[1], b"go")
        out, err = running.communicate(timeout=60)  # a hang guard, not a speed assertion
    finally:
        ended(running)
    assert running.returncode == 128 + signal.SIGINT, out + err
    assert "cancelled before any memory was written" in out and "Traceback" not in err, out + err


def test_a_stop_while_a_refusal_is_said_keeps_the_refusal(home: Home, source: Source) -> None:
    # Under `--json` the refusal is the only output, on stdout: no progress line comes first.
    command = [*_remem(home), "--no-daemon", "consolidate", "--json", "no-such-session"]
    unstopped = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert unstopped.returncode not in (0, 128 + signal.SIGINT), unstopped.stdout
    read, write = os.pipe()
    fill(write)  # the refusal waits for room: the stop comes while it is said
    said: list[bytes] = []
    with subprocess.Popen(command, stdout=write, stderr=subprocess.PIPE, text=True) as running:
        os.close(write)
        try:
            wait_until(lambda: writing_to(running.pid, 1), what="the command to say its refusal")
            running.send_signal(signal.SIGINT)
            draining = threading.Thread(target=lambda: said.append(drained(read)))
            draining.start()
            _, err = running.communicate(timeout=60)  # a hang guard, not a speed assertion
            draining.join()
        finally:
            ended(running)
            os.close(read)
    out = b"".join(said).replace(b"\0", b"").decode()
    assert (running.returncode, out, err) == (unstopped.returncode, unstopped.stdout, unstopped.stderr)


@pytest.mark.parametrize("as_json", [True, False], ids=["json-on-stdout", "line-on-stderr"])
def test_a_refusal_that_never_gets_room_is_given_up_at_a_second_stop(home: Home, as_json: bool) -> None:
    """Said into a full pipe nobody reads (a terminal paused with Ctrl-S), the refusal waits for
    good: a second stop ends the command with the refusal's status, where it hung until SIGKILL.
    No session is in the home, so that the refusal is the command's only line."""
    command = [
        *_remem(home),
        "--no-daemon",
        "consolidate",
        *(["--json"] if as_json else []),
        "no-such-session",
    ]
    unstopped = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert unstopped.returncode not in (0, 128 + signal.SIGINT), unstopped.stdout + unstopped.stderr
    read, write = os.pipe()
    fill(write)
    said_on = 1 if as_json else 2
    stdout, stderr = (write, subprocess.PIPE) if as_json else (subprocess.PIPE, write)
    with subprocess.Popen(command, stdout=stdout, stderr=stderr, text=True) as running:
        os.close(write)
        try:
            wait_until(lambda: writing_to(running.pid, said_on), what="the command to say its refusal")
            running.send_signal(signal.SIGINT)  # changes nothing: the refusal may yet find room
            wait_until(
                lambda: none_pending(running.pid) and writing_to(running.pid, said_on), what="it heard"
            )
            running.send_signal(signal.SIGTERM)
            out, err = running.communicate(timeout=60)  # a hang guard, not a speed assertion
        finally:
            ended(running)
            os.close(read)
    other = err if as_json else out  # the stream the refusal is not said on: nothing either
    assert (running.returncode, other) == (unstopped.returncode, ""), other


# The daemon stopped (SIGSTOP) as the command, refused, looks for a hint for the refusal: the
# daemon is stuck from then on. Only the command: the daemon it starts inherits this.
_STUCK_FOR_THE_HINT = f"""
import os, signal, sys

if "consolidate" in sys.argv:
    import remem.daemon.cli.consolidate as consolidate

    _looked_up = consolidate._missing_key_elsewhere

    def _daemon_stuck(backend):
        os.kill(int(os.environ["{STUCK_ENV}"]), signal.SIGSTOP)
        os.write(2, b"daemon stuck\\n")
        return _looked_up(backend)

    consolidate._missing_key_elsewhere = _daemon_stuck
"""


def test_a_refusal_whose_hint_a_stuck_daemon_cannot_give_is_said_at_a_stop(
    home: Home, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon with no key refuses the review (NO_ROUTE); the hint that this shell has the key
    is the daemon's to give. Stuck, it ignored every stop and ended the command 10 s later with
    its own failure, the refusal never said: a stop now leaves the hint out."""
    monkeypatch.delenv(NO_DAEMON_ENV)
    keyless = {name: value for name, value in os.environ.items() if name != KEY_ENV}
    subprocess.run([*_remem(home), "daemon", "start"], env=keyless, timeout=120, check=True)
    daemon = DaemonPaths(home).read_status()
    assert daemon is not None
    monkeypatch.setenv(STUCK_ENV, str(daemon.pid))
    monkeypatch.setenv("PYTHONPATH", hooked_pythonpath(_STUCK_FOR_THE_HINT, "remem-stuck-for-hint-"))
    running = _started(home, ["consolidate", source.id])
    try:
        _read_until(running, "daemon stuck")
        wait_until(lambda: _waiting_for_an_answer(running.pid), what="the command to ask for the hint")
        running.send_signal(signal.SIGINT)  # while the hint is asked for, not before
        _, err = running.communicate(timeout=60)  # a hang guard, not a speed assertion
    finally:
        ended(running)
        os.kill(daemon.pid, signal.SIGCONT)
        subprocess.run([*_remem(home), "daemon", "stop"], timeout=120)
    [refusal] = err.splitlines()[-1:]
    assert (running.returncode, refusal.startswith("remem: NO_ROUTE: "), "this shell" in refusal) == (
        EXIT_INVALID,
        True,
        False,
    ), err


# A process that embeds the CLI runs a consolidate, then, as it exits (after any callback the
# command registered: this one was first), says how it would take a stop there.
_EMBEDDING = """
import atexit, signal, sys
from click.testing import CliRunner


def _at_exit():
    print(signal.getsignal(signal.SIGINT) is signal.default_int_handler,
          signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)


atexit.register(_at_exit)
from remem.daemon.cli import cli

ran = CliRunner().invoke(cli, ["--home", sys.argv[1], "--no-daemon", "consolidate", "no-such-session"])
assert ran.exit_code not in (0, None), ran.output
"""


def test_a_process_embedding_a_consolidate_takes_stops_as_it_exits(home: Home, source: Source) -> None:
    """Only `remem` as the process ignores stops while it exits: an embedding process did too,
    and so did the children it started then (an ignored signal is inherited)."""
    ran = subprocess.run(
        [sys.executable, "-c", _EMBEDDING, str(home.root)], capture_output=True, text=True, timeout=120
    )
    assert (ran.returncode, ran.stdout) == (0, "True True\n"), ran.stdout + ran.stderr


def test_a_stop_before_the_daemon_asked_the_model_says_the_review_was_cancelled_before_it(
    home: Home, fake: FakeOpenAI, source: Source, served: None
) -> None:
    """A run waiting for another review of its session is cancelled before any model is asked:
    the daemon's refusal says so, and the command ends 128 + the signal saying it."""
    let_go = threading.Event()
    fake.reply(gated(let_go, tool_call(proposal(put("prefer-uv", source.evidence())))))
    first = _started(home, ["consolidate", source.id])
    try:
        _read_until(first, "waiting for the model")
        second = _started(home, ["consolidate", source.id])
        try:
            _read_until(second, "waiting for another consolidation of this session")
            second.send_signal(signal.SIGINT)
            out, err = second.communicate(timeout=60)  # a hang guard, not a speed assertion
        finally:
            ended(second)
        let_go.set()
        first.communicate(timeout=60)
    finally:
        let_go.set()
        ended(first)
    interrupted = "remem: interrupted: cancelled before the model was asked; run it again to review"
    assert (second.returncode, err.splitlines()[-1:], fake.count) == (130, [interrupted], 1), out + err
    assert first.returncode == 0


def test_a_cancel_whose_daemon_died_starts_no_daemon(
    home: Home, fake: FakeOpenAI, source: Source, served: None
) -> None:
    """The stop's cancel goes on the run's own connection: a daemon dead by then is nothing to
    cancel, said as such, and no daemon is started only to be told to cancel. The daemon is held
    (SIGSTOP) until it is killed, so that it cannot answer the cancel first."""
    let_go = threading.Event()
    fake.reply(gated(let_go, tool_call(proposal(put("prefer-uv", source.evidence())))))
    running = _started(home, ["consolidate", source.id])
    held: list[int] = []
    try:
        _read_until(running, "waiting for the model")
        daemon = DaemonPaths(home).read_status()
        assert daemon is not None
        os.kill(daemon.pid, signal.SIGSTOP)
        held.append(daemon.pid)
        running.send_signal(signal.SIGINT)
        _read_until(running, "remem: stopping: asking the daemon to cancel the review")
        os.kill(daemon.pid, signal.SIGKILL)
        _, err = running.communicate(timeout=60)  # a hang guard, not a speed assertion
    finally:
        let_go.set()
        ended(running)
        for pid in held:  # killed, unless the test failed first: `served` then stops it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    unanswered = (
        "remem: interrupted before the daemon answered its cancel: the review may still commit "
        f"(remem receipts --session {source.id} shows what became of it)"
    )
    assert (running.returncode, err.splitlines()[-1:]) == (130, [unanswered]), err
    # The killed daemon's lock goes as the kernel closes its files: none started since holds it.
    wait_until(lambda: not DaemonPaths(home, layout=False).running(), what="no daemon to be running")


def _waiting_for_an_answer(pid: int) -> bool:
    """Whether process `pid` waits in its event loop, as a daemon call does for its answer."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text() == "do_epoll_wait"
    except OSError:  # exited meanwhile: the wait failed, as the test then says
        return False


def _started(home: Home, args: list[str], pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*_remem(home), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, pass_fds=pass_fds
    )


def _read_until(running: subprocess.Popen[str], said: str) -> None:
    """Read `running`'s stderr up to the line that holds `said`; fail if it ends first."""
    assert running.stderr is not None
    for line in running.stderr:
        if said in line:
            return
    raise AssertionError(f"the command ended (status {running.wait()}) without saying {said!r}")


def _remem(home: Home) -> list[str]:
    return [sys.executable, "-m", "remem.daemon", "--home", str(home.root)]
