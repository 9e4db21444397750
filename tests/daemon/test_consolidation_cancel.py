"""A cancel that arrives before the review has begun still gets the run an answer; one that
arrives while two runs of a session overlap stops both; Ctrl-C on the CLI is one too, and the
CLI says what it did: a review past its commit barrier, which the daemon commits all the same,
was said "the daemon cancelled the review", exit 128 + the signal."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.rpc import CONSOLIDATION_REFUSED, RpcError
from remem.daemon.server.runtime import DaemonPaths
from tests.consolidation.conftest import KEY_ENV, Source, configure, proposal, put, write_source
from tests.fake_openai import FakeOpenAI, slow, tool_call
from tests.scratch import hooked_pythonpath
from tests.waiting import until, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def served(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[FakeOpenAI, Source]]:
    """A home its daemon serves, whose one session the fake model is set to review."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    monkeypatch.delenv(NO_DAEMON_ENV)
    with FakeOpenAI(api_key="sk-test") as fake:
        root = tmp_path / "dsh-sessions"
        configure(home, fake, root)
        home.settings_file.write_text(home.settings_file.read_text() + "daemon:\n  idle_minutes: 2\n")
        yield fake, write_source(root, str(tmp_path / "project"))


def test_a_cancel_before_the_review_began_answers_the_run(
    home: Home, served: tuple[FakeOpenAI, Source]
) -> None:
    fake, source = served

    async def scenario() -> tuple[object, dict[str, object]]:
        client = await AsyncDaemonClient.open(home)
        # Sent together: the daemon reads both before the run reaches its first wait.
        run = asyncio.ensure_future(client.call("consolidation/run", {"session": source.id}))
        cancel = asyncio.ensure_future(client.call("consolidation/cancel", {"session": source.id}))
        answered = await asyncio.wait_for(asyncio.gather(run, return_exceptions=True), 30)
        cancelled = await cancel
        await client.close()
        return answered[0], cancelled

    outcome, cancelled = asyncio.run(scenario())
    assert cancelled == {"cancelled": True} and fake.count == 0
    assert isinstance(outcome, RpcError) and outcome.code == CONSOLIDATION_REFUSED
    assert outcome.data == {"code": "CANCELLED"} and "before the model was asked" in outcome.message


def test_a_cancel_stops_the_run_asking_the_model_and_the_one_queued_behind_it(
    home: Home, served: tuple[FakeOpenAI, Source]
) -> None:
    fake, source = served
    # Uncancelled, the first run would commit this once the second one is queued.
    fake.reply(slow(3, tool_call(proposal(put("prefer-uv", source.evidence())))))

    async def scenario() -> tuple[list[object], dict[str, object]]:
        frozen: list[object] = []
        client = await AsyncDaemonClient.open(
            home, listener=lambda m, p: frozen.append(p) if p.get("phase") == "freezing" else None
        )
        first = asyncio.ensure_future(client.call("consolidation/run", {"session": source.id}))
        await until(lambda: fake.count == 1, what="the first run to ask the model")
        second = asyncio.ensure_future(client.call("consolidation/run", {"session": source.id}))
        await until(lambda: len(frozen) == 2, what="the second run to start")
        cancelled = await client.call("consolidation/cancel", {"session": source.id})
        answers = await asyncio.wait_for(asyncio.gather(first, second, return_exceptions=True), 30)
        await client.close()
        return answers, cancelled

    (first, second), cancelled = asyncio.run(scenario())
    assert cancelled == {"cancelled": True} and fake.count == 1
    assert isinstance(first, dict) and first["status"] == "cancelled", first
    assert isinstance(second, RpcError) and second.data == {"code": "CANCELLED"}, second
    assert MemoryStore(home).read_workspace(WorkspaceId.from_cwd(source.cwd)).records == []


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize(
    ("where", "said"),
    [
        ([], "cancelled before any memory was written"),
        (["--no-daemon"], "cancelled before any memory was written"),
    ],
    ids=["through-the-daemon", "in-process"],
)
def test_an_interrupted_consolidate_cancels_the_review(
    home: Home, served: tuple[FakeOpenAI, Source], where: list[str], said: str, stop: signal.Signals
) -> None:
    """Ctrl-C on `remem consolidate` ends the client; the review, in the daemon or in the
    client's own process, must end too. A `kill`, `timeout` or a CI runner cancelling (SIGTERM)
    and a closed terminal (SIGHUP) are the user walking away alike (decision 0528)."""
    running = _reviewing(home, served, where)
    running.send_signal(stop)
    out, err = running.communicate(timeout=30)
    assert running.returncode == 128 + stop and said in out + err, out + err  # as shells report it
    _assert_cancelled(home, served[1])


# Past its barrier, the review waits, before it marks itself committing, until a cancel has
# been answered: a stop the test sends once the review is committing is then always too late,
# and always heard before the commit. (Once marked, a cancel waits for the commit to end, as
# every request that may read memory does.)
_COMMITS_ONCE_CANCELLED = """
import threading
from remem.daemon.consolidation import runner
from remem.daemon.server import consolidation_methods

_cancelled = threading.Event()
_commit = runner.Consolidator._commit
_cancel = consolidation_methods.ConsolidationMethods.cancel


def _commit_once_cancelled(self, *args):
    _cancelled.wait()
    return _commit(self, *args)


async def _cancel_told(self, params):
    answer = await _cancel(self, params)
    _cancelled.set()
    return answer


runner.Consolidator._commit = _commit_once_cancelled
consolidation_methods.ConsolidationMethods.cancel = _cancel_told
"""


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_too_late_to_cancel_the_review_says_it_committed(
    home: Home, served: tuple[FakeOpenAI, Source], monkeypatch: pytest.MonkeyPatch, stop: signal.Signals
) -> None:
    fake, source = served
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    monkeypatch.setenv("PYTHONPATH", hooked_pythonpath(_COMMITS_ONCE_CANCELLED, "remem-commit-held-"))
    with subprocess.Popen(
        [*_remem(home), "consolidate", source.id], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as running:
        assert running.stderr is not None
        for line in running.stderr:  # past the commit barrier: no cancel stops it now
            if "committing to memory" in line:
                break
        running.send_signal(stop)
        out, err = running.communicate(timeout=60)  # a hang guard, not a speed assertion
    listed = subprocess.run([*_remem(home), "receipts", "--json"], capture_output=True, text=True)
    [receipt] = json.loads(listed.stdout)["receipts"]
    committed = f"committed, 1 change(s) — review {receipt['review']}, attempt 1"
    said = (running.returncode, out.splitlines()[:1], "cancelled" in err)  # asked to cancel, never said done
    assert said == (0, [committed], False), out + err


def test_one_stop_ends_the_command_when_the_daemon_never_answers_its_cancel(
    home: Home, served: tuple[FakeOpenAI, Source]
) -> None:
    """A stopped or stuck daemon never answers the stop's cancel: the one SIGTERM of a `timeout`
    must still end the command, at the daemon-answer limit, saying the review may still commit
    (a waiting that hung forever, printing nothing, looked like a CLI that ignores stops)."""
    running = _reviewing(home, served, [])
    try:
        with _daemon_stopped(home):
            running.send_signal(signal.SIGINT)
            out, err = running.communicate(timeout=60)  # a hang guard, not a speed assertion
    finally:
        _ended(running)
    assert running.returncode == 130 and "Traceback" not in err, out + err
    assert "remem: stopping: asking the daemon to cancel the review (stop again to stop waiting)" in err, err
    assert err.splitlines()[-1] == _UNANSWERED.format(session=served[1].id), err


def test_a_daemon_dying_after_the_stop_ends_the_command_as_the_stop(
    home: Home, served: tuple[FakeOpenAI, Source]
) -> None:
    """A daemon that dies while the stop's cancel waits for it is not a failure of the command to
    be said with a traceback: the stop came before any answer, so it ends 128 + its signal."""
    running = _reviewing(home, served, [])
    assert running.stderr is not None
    said: list[str] = []
    reading = threading.Thread(target=lambda: said.extend(line for line in running.stderr or ()))
    reading.start()
    try:
        with _daemon_stopped(home) as daemon:
            running.send_signal(signal.SIGINT)
            wait_until(
                lambda: any("remem: stopping" in line for line in said), what="the stop heard", seen=said.copy
            )
            os.kill(daemon, signal.SIGKILL)
            running.wait(timeout=60)  # a hang guard, not a speed assertion
    finally:
        _ended(running)
        reading.join()
    err = "".join(said)
    assert running.returncode == 130 and "Traceback" not in err, err
    assert said[-1].rstrip("\n") == _UNANSWERED.format(session=served[1].id), err


_UNANSWERED = (
    "remem: interrupted before the daemon answered its cancel: the review may still commit "
    "(remem receipts --session {session} shows what became of it)"
)


@contextmanager
def _daemon_stopped(home: Home) -> Iterator[int]:
    """The pid of the home's daemon, stopped (SIGSTOP) until the block ends, as a stuck one is."""
    status = DaemonPaths(home).read_status()
    assert status is not None
    os.kill(status.pid, signal.SIGSTOP)
    try:
        yield status.pid
    finally:
        with suppress(ProcessLookupError):  # killed by the test
            os.kill(status.pid, signal.SIGCONT)


def _ended(running: subprocess.Popen[str]) -> None:
    """`running` ended, killed if a hang guard gave up on it, so that no test leaves it behind."""
    if running.poll() is None:
        running.kill()
        running.wait()


def _ignoring_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as `remem consolidate ID &` in a script


@pytest.mark.parametrize(
    ("ignoring", "stops"),
    [
        (_ignoring_ctrl_c, [signal.SIGTERM]),
        (None, [signal.SIGINT, signal.SIGTERM]),
        (None, [signal.SIGHUP, signal.SIGTERM]),
    ],
    ids=["ctrl-c-ignored", "ctrl-c-and-kill", "hangup-and-kill"],
)
def test_an_in_process_review_is_cancelled_by_any_stop_however_many(
    home: Home,
    served: tuple[FakeOpenAI, Source],
    ignoring: Callable[[], None] | None,
    stops: list[signal.Signals],
) -> None:
    """A kill while Ctrl-C is ignored (a CI runner's `cmd &`) still cancels the review this process
    runs, and a second stop while it is cancelled (signals of two kinds are both delivered)
    neither breaks into that cancel with a traceback nor leaves the receipt `running`."""
    running = _reviewing(home, served, ["--no-daemon"], ignoring)
    for stop in stops:
        running.send_signal(stop)
    out, err = running.communicate(timeout=30)
    assert running.returncode in {128 + stop for stop in stops}, out + err
    assert "cancelled before any memory was written" in out and "Traceback" not in err, out + err
    _assert_cancelled(home, served[1])


def _reviewing(
    home: Home, served: tuple[FakeOpenAI, Source], where: list[str], before: Callable[[], None] | None = None
) -> subprocess.Popen[str]:
    """`remem consolidate` of the served session, once it waits for the model's (slow) answer."""
    fake, source = served
    fake.reply(slow(8, tool_call(proposal(put("prefer-uv", source.evidence())))))
    running = subprocess.Popen(
        [*_remem(home), *where, "consolidate", source.id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=before,
    )
    assert running.stderr is not None
    for line in running.stderr:  # the model has been asked: the review is under way
        if "waiting for the model" in line:
            break
    return running


def _assert_cancelled(home: Home, source: Source) -> None:
    listed = subprocess.run([*_remem(home), "receipts", "--json"], capture_output=True, text=True)
    [receipt] = json.loads(listed.stdout)["receipts"]
    assert receipt["status"] == "cancelled" and receipt["changes"] == []
    assert MemoryStore(home).read_workspace(WorkspaceId.from_cwd(source.cwd)).records == []


def _remem(home: Home) -> list[str]:
    return [sys.executable, "-m", "remem.daemon", "--home", str(home.root)]
