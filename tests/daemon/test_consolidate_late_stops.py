"""A stop that reaches `remem consolidate` once its review has answered ends the command at
once with the review's own status (128 + the signal when it cut a `--json` answer, which a
script could not read), one line saying its outcome and where its receipt is; a
closed terminal, whose writes all fail after its SIGHUP (EIO), ends a review it cancelled 129
all the same (decision 0540 and its addendum).

Through the daemon such a SIGTERM or SIGHUP killed the command outright (-15, -1 to its
parent); then it ended 128 + the signal saying "interrupted", as a cancelled review does, for
a review that had committed; a closed terminal's lines failed it with "the output could not be
written", exit 1; one that cut its `--json` answer ended 0 with no JSON for a script to read;
a SIGTERM as an in-process run gave its handlers back, at their default a moment, killed it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from remem.daemon.home import Home
from tests.consolidation.conftest import Source, proposal, put
from tests.fake_openai import FakeOpenAI, slow, tool_call
from tests.scratch import hooked_pythonpath
from tests.stop_helpers import ended, fill, none_pending, writing_to
from tests.terminal import in_a_terminal, read_until
from tests.waiting import wait_until

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_once_the_review_answered_says_its_outcome_and_ends_with_its_status(
    home: Home, fake: FakeOpenAI, source: Source, stop: signal.Signals
) -> None:
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    read, write = os.pipe()
    fill(write)  # the result's first line waits for room: the command is past its review
    try:
        with subprocess.Popen(
            [*_remem(home), "consolidate", source.id], stdout=write, stderr=subprocess.PIPE, text=True
        ) as running:
            os.close(write)
            wait_until(lambda: writing_to(running.pid, 1), what="the command to write its result")
            running.send_signal(stop)
            _, err = running.communicate(timeout=60)  # a hang guard, not a speed assertion
    finally:
        os.close(read)
    assert (running.returncode, err.endswith(_committed(home, source)), "Traceback" in err) == (
        0,
        True,
        False,
    ), err


def test_a_stop_while_the_first_one_is_said_changes_neither_the_line_nor_the_status(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    read, write = os.pipe()
    said, saying = os.pipe()
    fill(write)
    with subprocess.Popen([*_remem(home), "consolidate", source.id], stdout=write, stderr=saying) as running:
        os.close(write)
        wait_until(lambda: writing_to(running.pid, 1), what="the command to write its result")
        fill(saying)  # the first stop's line waits for room too
        running.send_signal(signal.SIGTERM)
        wait_until(lambda: writing_to(running.pid, 2), what="the command to say it was stopped")
        running.send_signal(signal.SIGTERM)
        os.close(saying)
        with os.fdopen(said, "rb") as err:
            text = err.read().replace(b"\0", b"").decode()
        running.wait(timeout=60)  # a hang guard, not a speed assertion
    os.close(read)
    assert (running.returncode, text.endswith(_committed(home, source))) == (0, True), text


def test_a_stop_line_that_never_gets_room_is_given_up_at_the_second_stop_after_it(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    """Its stderr a full pipe nobody reads (or a terminal paused with Ctrl-S): the stop's line
    waits for good, and the command hung until SIGKILL; it ends with the review's status."""
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    read, write = os.pipe()
    unread, saying = os.pipe()
    fill(write)
    with subprocess.Popen([*_remem(home), "consolidate", source.id], stdout=write, stderr=saying) as running:
        os.close(write)
        try:
            wait_until(lambda: writing_to(running.pid, 1), what="the command to write its result")
            fill(saying)  # the stop's line waits for room too, and never gets it
            os.close(saying)
            running.send_signal(signal.SIGTERM)
            wait_until(lambda: writing_to(running.pid, 2), what="the command to say it was stopped")
            running.send_signal(signal.SIGINT)  # changes nothing: the line may yet find room
            wait_until(lambda: none_pending(running.pid) and writing_to(running.pid, 2), what="it heard")
            running.send_signal(signal.SIGTERM)
            running.wait(timeout=60)  # a hang guard, not a speed assertion
        finally:
            ended(running)
            os.close(read)
            os.close(unread)
    assert (running.returncode, _receipt_status(home)) == (0, "committed")


@pytest.mark.parametrize("where", [[], ["--no-daemon"]], ids=["through-the-daemon", "in-process"])
def test_a_stop_that_cuts_the_json_ends_with_the_stop_s_status_and_says_the_outcome(
    home: Home, fake: FakeOpenAI, source: Source, where: list[str]
) -> None:
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    read, write = os.pipe()
    fill(write)  # the JSON waits for room: a script reading it would get none of it
    try:
        with subprocess.Popen(
            [*_remem(home), *where, "consolidate", "--json", source.id],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
        ) as running:
            os.close(write)
            wait_until(lambda: writing_to(running.pid, 1), what="the command to write its JSON")
            running.send_signal(signal.SIGTERM)
            _, err = running.communicate(timeout=60)  # a hang guard, not a speed assertion
    finally:
        os.close(read)
    assert (running.returncode, err) == (128 + signal.SIGTERM, _committed(home, source))


@pytest.mark.parametrize("where", [[], ["--no-daemon"]], ids=["through-the-daemon", "in-process"])
def test_a_closed_terminal_ends_the_command_129_though_nothing_can_be_written(
    home: Home, fake: FakeOpenAI, source: Source, where: list[str]
) -> None:
    fake.reply(slow(8, tool_call(proposal(put("prefer-uv", source.evidence())))))
    command = [*_remem(home), *where, "consolidate", source.id]
    running, master = in_a_terminal(command)
    with running:
        read_until(master, b"waiting for the model")
        os.close(master)  # the terminal closes: SIGHUP, then every write to it fails (EIO)
        running.wait(timeout=60)  # a hang guard, not a speed assertion
    assert running.returncode == 129
    assert _receipt_status(home) == "cancelled"


def test_a_kill_as_an_in_process_run_gives_its_stops_back_is_heard(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    monkeypatch.setenv("PYTHONPATH", hooked_pythonpath(_KILLED_AS_GIVEN_BACK, "remem-late-stops-hook-"))
    ran = subprocess.run(
        [*_remem(home), "--no-daemon", "consolidate", "--json", source.id],
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard, not a speed assertion
    )
    interrupted = f"remem: interrupted (remem receipts --session {source.id} shows any review it began)\n"
    assert (ran.returncode, ran.stderr) == (128 + signal.SIGTERM, interrupted)


# A SIGTERM the moment the in-process run, done, gives SIGTERM back to the command's handler.
_KILLED_AS_GIVEN_BACK = """
import os, signal, sys

_signal = signal.signal


def _killed_as_given_back(signum, handler):
    before = _signal(signum, handler)
    frame, names = sys._getframe(), set()
    while frame is not None:
        names.add(frame.f_code.co_name)
        frame = frame.f_back
    if signum == signal.SIGTERM and {"cancelled_by_stops", "__exit__"} <= names:
        os.kill(os.getpid(), signal.SIGTERM)
    return before


signal.signal = _killed_as_given_back
"""


def _committed(home: Home, source: Source) -> str:
    """The line a stop once the review committed ends the command with."""
    listed = subprocess.run([*_remem(home), "receipts", "--json"], capture_output=True, text=True)
    [receipt] = json.loads(listed.stdout)["receipts"]
    assert receipt["status"] == "committed"
    return (
        f"remem: stopped once the review had ended: committed, 1 change(s) — review {receipt['review']}, "
        f"attempt 1 (remem receipts --session {source.id} shows it and how to undo it)\n"
    )


def _receipt_status(home: Home) -> str:
    listed = subprocess.run([*_remem(home), "receipts", "--json"], capture_output=True, text=True)
    [receipt] = json.loads(listed.stdout)["receipts"]
    return str(receipt["status"])


def _remem(home: Home) -> list[str]:
    return [sys.executable, "-m", "remem.daemon", "--home", str(home.root)]
