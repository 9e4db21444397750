"""The daemon process: singleton, auto-start, crash recovery, idle exit, hostile input."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from remem.daemon import client as daemon_client
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient, DaemonUnavailable
from remem.daemon.home import Home, HomeUnusable
from remem.daemon.locks import file_lock
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.rpc import MAX_MESSAGE_BYTES
from remem.daemon.server.runtime import DaemonPaths
from remem.daemon.sessions.cold_reads import INDEX_BATCH
from tests.consolidation.conftest import Source
from tests.failure_said import failure_line
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.unwritable import unwritable

from .helpers import calls, remem, wait_until

pytestmark = pytest.mark.slow
EMPTY_REVISION = f"sha256:{hashlib.sha256(b'').hexdigest()}"  # of Global while it is empty


def status(home: Home) -> dict:  # type: ignore[type-arg]
    return json.loads(remem(home, "daemon", "status", "--json").stdout)


def test_start_status_stop(home: Home) -> None:
    assert remem(home, "daemon", "status").returncode == 1
    started = remem(home, "daemon", "start", "--json")
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    assert status(home)["pid"] == info["pid"] and status(home)["running"] is True
    paths = DaemonPaths(home)
    sock = Path(paths.read_status().socket)  # type: ignore[union-attr]
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600 and stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(paths.status.stat().st_mode) == 0o600
    assert remem(home, "daemon", "start", "--json").stdout == started.stdout.replace(
        '"clients": 1', '"clients": 1'
    )
    stopped = remem(home, "daemon", "stop", "--json")
    assert json.loads(stopped.stdout) == {"stopped": True}
    assert not paths.running() and not paths.status.exists() and not sock.exists()
    assert status(home) == {"running": False}


def test_asking_after_the_daemon_of_a_home_that_does_not_exist_makes_none(tmp_path: Path) -> None:
    """A mistyped `--home` (or `REMEM_HOME='~/x'`, quoted) asked about its daemon: none runs,
    and no stray home is left behind."""
    missing = Home(tmp_path / "typo")
    asked = remem(missing, "daemon", "status", "--json")
    assert (asked.returncode, json.loads(asked.stdout)) == (1, {"running": False})
    said = remem(missing, "daemon", "status")
    assert said.stdout == f"remem daemon not running (no home at {missing.root})\n"
    stopped = remem(missing, "daemon", "stop", "--json")
    assert (stopped.returncode, json.loads(stopped.stdout)) == (0, {"stopped": False})
    assert not missing.root.exists()


def test_two_daemons_racing_leave_one_running(home: Home) -> None:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "run"]
    first, second = (
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    )
    wait_until(lambda: first.poll() is not None or second.poll() is not None)
    loser, winner = (first, second) if first.poll() is not None else (second, first)
    out, _ = loser.communicate(timeout=30)
    assert loser.returncode == 0 and "already running" in out
    wait_until(lambda: DaemonPaths(home).read_status() is not None)
    assert status(home)["pid"] == winner.pid
    remem(home, "daemon", "stop")
    assert winner.wait(timeout=30) == 0


def test_ten_clients_auto_starting_at_once_share_one_daemon(home: Home) -> None:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "start", "--json"]
    clients = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(10)
    ]
    pids = set()
    for client in clients:
        out, err = client.communicate(timeout=60)
        assert client.returncode == 0, err
        pids.add(json.loads(out)["pid"])
    assert len(pids) == 1 and status(home)["pid"] in pids


def test_a_killed_daemon_is_replaced_on_the_next_call(home: Home) -> None:
    first = json.loads(remem(home, "daemon", "start", "--json").stdout)["pid"]
    os.kill(first, signal.SIGKILL)
    paths = DaemonPaths(home)
    wait_until(lambda: not paths.running())
    assert paths.status.exists(), "a killed daemon leaves its status file behind"
    assert status(home) == {"running": False}, "a stale status file is not a running daemon"
    second = json.loads(remem(home, "daemon", "start", "--json").stdout)["pid"]
    assert second != first and paths.read_status().pid == second  # type: ignore[union-attr]


def test_a_client_reconnects_after_the_daemon_is_killed(home: Home) -> None:
    async def scenario() -> tuple[int, int, object]:
        client = await AsyncDaemonClient.open(home)
        first = (await client.call("daemon/status"))["pid"]
        waiting = asyncio.create_task(client.call("sessions/list"))
        os.kill(first, signal.SIGKILL)
        lost = await asyncio.gather(waiting, return_exceptions=True)
        # The same client object: the next call starts a new daemon and carries on.
        second = (await client.call("daemon/status"))["pid"]
        await client.close()
        return first, second, lost[0]

    first, second, lost = asyncio.run(scenario())
    assert second != first and DaemonPaths(home).read_status().pid == second  # type: ignore[union-attr]
    assert isinstance(lost, (DaemonUnavailable, dict)), "in flight: failed clearly, or answered in time"


def test_idle_daemon_exits(home: Home) -> None:
    home.settings_file.write_text("daemon:\n  idle_minutes: 0.01\n")
    assert remem(home, "daemon", "start").returncode == 0
    paths = DaemonPaths(home)
    wait_until(lambda: not paths.running(), seconds=30)
    assert not paths.status.exists()


def exchange(sock: socket.socket, payload: bytes) -> dict | None:  # type: ignore[type-arg]
    sock.sendall(payload)
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    return json.loads(data)


def test_hostile_messages_get_errors_and_the_daemon_keeps_serving(home: Home) -> None:
    assert remem(home, "daemon", "start").returncode == 0
    path = DaemonPaths(home).read_status().socket  # type: ignore[union-attr]
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(path)
        assert exchange(sock, b"{not json\n")["error"]["code"] == -32700  # type: ignore[index]
        assert exchange(sock, b"[]\n")["error"]["code"] == -32600  # type: ignore[index]
        assert (
            exchange(sock, b'{"jsonrpc":"1.0","id":1,"method":"daemon/status"}\n')["error"]["code"] == -32600
        )  # type: ignore[index]
        unknown = exchange(sock, b'{"jsonrpc":"2.0","id":2,"method":"rm -rf"}\n')
        assert unknown == {
            "jsonrpc": "2.0",
            "id": 2,
            "error": {"code": -32601, "message": "unknown method 'rm -rf'"},
        }
        bad = exchange(sock, b'{"jsonrpc":"2.0","id":3,"method":"daemon/hello","params":{"protocol":"x"}}\n')
        assert bad["error"]["code"] == -32602  # type: ignore[index]
        assert {p["field"] for p in bad["error"]["data"]} == {"protocol", "version"}  # type: ignore[index]
        sock.sendall(b'{"jsonrpc":"2.0","method":"daemon/status"}\n')  # a notification: no answer
        status_reply = exchange(sock, b'{"jsonrpc":"2.0","id":"s","method":"daemon/status"}\n')
        assert status_reply["id"] == "s" and status_reply["result"]["clients"] == 1  # type: ignore[index]
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(path)
        reply = exchange(sock, b"x" * (MAX_MESSAGE_BYTES + 10) + b"\n")
        assert reply is not None and "exceeds" in reply["error"]["message"]
        assert sock.recv(1) == b"", "the connection is closed after an oversized message"
    with socket.socket(socket.AF_UNIX) as silent:  # half-closed and never-reading clients
        silent.connect(path)
        silent.shutdown(socket.SHUT_WR)
    assert status(home)["running"] is True


def test_a_daemon_of_another_version_is_replaced(home: Home) -> None:
    # An "old" daemon: the real process code, started with a different app version.
    old_daemon = (
        "import sys; import remem.daemon.protocol.rpc as protocol; protocol.APP_VERSION = '0.0.1-old'; "
        "from remem.daemon.home import Home; from remem.daemon.server.process import run; "
        "sys.exit(run(Home.resolve(sys.argv[1])))"
    )
    old = subprocess.Popen([sys.executable, "-c", old_daemon, str(home.root)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)  # fmt: skip
    paths = DaemonPaths(home)
    wait_until(lambda: paths.read_status() is not None)
    assert paths.read_status().version == "0.0.1-old"  # type: ignore[union-attr]
    started = json.loads(remem(home, "daemon", "start", "--json").stdout)
    assert old.wait(timeout=30) == 0, "the old daemon was asked to stop"
    assert started["version"] != "0.0.1-old" and started["pid"] != old.pid


def test_sigterm_stops_the_daemon_cleanly(home: Home) -> None:
    pid = json.loads(remem(home, "daemon", "start", "--json").stdout)["pid"]
    paths = DaemonPaths(home)
    sock = Path(paths.read_status().socket)  # type: ignore[union-attr]
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not paths.running())
    assert not paths.status.exists() and not sock.exists()


def stopped_while_answering(
    home: Home, held: contextlib.AbstractContextManager[object], *args: str
) -> tuple[subprocess.CompletedProcess[str], int]:
    """`remem ARGS` through the daemon, with `remem daemon stop` run while the daemon answers
    it, and the exit status of that stop: `held` holds what the request waits for (a lock)
    until the daemon is stopping."""
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root)]
    with held:
        asked = subprocess.Popen([*command, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: status(home).get("clients", 0) >= 2, what="the command's connection")
        stopping = subprocess.Popen([*command, "daemon", "stop"], stdout=subprocess.DEVNULL)
        wait_until(lambda: not DaemonPaths(home).status.exists(), what="the daemon stopping")
    out, err = asked.communicate(timeout=60)
    return subprocess.CompletedProcess(asked.args, asked.returncode, out, err), stopping.wait(timeout=60)


@contextlib.contextmanager
def index_write_held(home: Home) -> Iterator[None]:
    index = sqlite3.connect(home.state / "index.sqlite", isolation_level=None)
    index.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        index.execute("ROLLBACK")
        index.close()


@pytest.fixture
def listed_root(home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A session root in the settings and a workspace folder, both empty, listed once through a
    daemon: it runs, and its index exists."""
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    root, workspace = tmp_path / "dsh-sessions", tmp_path / "project"
    root.mkdir()
    workspace.mkdir()
    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\nsessions:\n  roots: [{str(root)!r}]\n")
    assert remem(home, "sessions", "list").returncode == 0
    return root, workspace


def test_a_listing_under_way_when_the_daemon_is_stopped_is_answered_by_the_next_daemon(
    home: Home, listed_root: tuple[Path, Path]
) -> None:
    """`remem daemon stop` while a listing is under way (a script's, the editor's first tree):
    a read, it is asked again of a daemon started anew, not failed with "the daemon closed the
    connection". The daemon's listing (of a workspace, a query it has no answer of yet) waits
    at its write of the new log's row until the stop has come."""
    root, workspace = listed_root
    draft = build_session(SessionSpec(seed=4, turns=2, cwd=str(workspace)))
    write_session(root, draft)
    listed, stopped = stopped_while_answering(
        home, index_write_held(home), "sessions", "list", "--cwd", str(workspace), "--json"
    )
    assert stopped == 0 and listed.returncode == 0, listed.stderr
    assert [s["id"] for s in json.loads(listed.stdout)["sessions"]] == [draft.header.id]


def test_a_listing_under_way_ends_at_its_next_log_when_the_daemon_stops(
    home: Home, listed_root: tuple[Path, Path]
) -> None:
    """The daemon waits for its worker threads as it exits: a cold listing of a large corpus
    kept `remem daemon stop` waiting until it was done (and SIGKILLed it past 15 s). It ends
    at its next log: here, held at its first batch's write until the stop came, it stores that
    batch and reads no further log (the client here does not ask again)."""
    root, workspace = listed_root
    for seed in range(3 * INDEX_BATCH):
        write_session(root, build_session(SessionSpec(seed=seed, turns=1, cwd=str(workspace))))
    with ThreadPoolExecutor(1) as pool, index_write_held(home):
        asked = pool.submit(calls, home, [("sessions/list", {"cwd": str(workspace)})])
        wait_until(lambda: status(home).get("clients", 0) >= 2, what="the listing's connection")
        stopping = subprocess.Popen(
            [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "stop"]
        )
        wait_until(lambda: not DaemonPaths(home).status.exists(), what="the daemon stopping")
    with pytest.raises(DaemonUnavailable):
        asked.result(timeout=60)
    assert stopping.wait(timeout=60) == 0
    with contextlib.closing(sqlite3.connect(home.state / "index.sqlite")) as index:
        assert index.execute("SELECT count(*) FROM logs").fetchone()[0] == INDEX_BATCH


def test_a_write_under_way_when_the_daemon_is_stopped_is_not_asked_again(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compare-and-swapped write is never sent twice: it may have been done (here it was,
    by the daemon stopping, once Global's lock was let go), so the command says so."""
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    assert remem(home, "daemon", "start").returncode == 0  # its start settles memory, under the lock
    revision = EMPTY_REVISION
    new = tmp_path / "GLOBAL.md"
    new.write_text("Prefer small commits.\n")
    replaced, stopped = stopped_while_answering(
        home, file_lock(home.locks / "global.lock"),
        "memory", "replace-global", "--expected-revision", revision, "--file", str(new),
    )  # fmt: skip
    assert stopped == 0 and replaced.returncode == 1
    assert "stopped while answering; it may or may not have been done: look" in replaced.stderr
    assert home.global_file.read_text() == "Prefer small commits.\n"


def test_a_write_under_way_when_the_daemon_dies_says_it_died_with_its_log(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed while a compare-and-swapped write waited for Global's lock, the daemon was said to
    have "stopped", with no word of its log, as if someone had stopped it."""
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    assert remem(home, "daemon", "start").returncode == 0
    new = tmp_path / "GLOBAL.md"
    new.write_text("Prefer small commits.\n")
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root)]
    replace = ["memory", "replace-global", "--expected-revision", EMPTY_REVISION, "--file", str(new)]
    with file_lock(home.locks / "global.lock"):  # the write waits for it in the daemon
        asked = subprocess.Popen(
            [*command, *replace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        wait_until(lambda: status(home).get("clients", 0) >= 2, what="the command's connection")
        info = DaemonPaths(home).read_status()
        assert info is not None
        os.kill(info.pid, signal.SIGKILL)
        _, said = asked.communicate(timeout=60)
    assert asked.returncode == 1, said
    assert said.startswith(f"remem: the daemon died (its log: {DaemonPaths(home).log}) while answering; "), (
        said
    )
    assert "it may or may not have been done: look, then try again" in said


def test_a_revert_under_way_when_the_daemon_is_stopped_is_not_asked_again(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked again of the next daemon, a revert the stopping one had committed answered
    `no-change` (or `conflict`, with its expected revision): the user, told it was not done,
    would undo the change it made."""
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    store = MemoryStore(home)
    first = store.replace_global(EMPTY_REVISION, "Prefer small commits.\n")
    store.replace_global(first.revision, "Prefer large commits.\n")
    assert first.history is not None
    assert remem(home, "daemon", "start").returncode == 0  # its start settles memory, under the lock
    reverted, stopped = stopped_while_answering(
        home, file_lock(home.locks / "global.lock"), "memory", "revert", first.history
    )
    assert stopped == 0 and reverted.returncode == 1
    assert "stopped while answering; it may or may not have been done: look" in reverted.stderr
    assert home.global_file.read_text() == "Prefer small commits.\n"


def test_a_fork_the_daemon_died_in_may_be_made_and_is_retried_with_its_operation_id(
    home: Home, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon that dies is not asked again (the same request might kill the next one). Killed
    once a fork's child was published, it was said only as "the daemon closed the connection",
    though the child was there and the same command finishes the fork."""
    fork = ("sessions", "fork", source.id, "--turn", "1", "--op-id", "dcrash1")
    monkeypatch.setenv("REMEM_FAULTPOINT", "fork.after-publish")  # the daemon the command starts dies there
    crashed = remem(home, *fork)
    monkeypatch.delenv("REMEM_FAULTPOINT")
    assert crashed.returncode == 1, crashed.stderr
    said = crashed.stderr
    assert said.startswith("remem: the daemon stopped while it worked on this (it died;"), said
    assert "the fork may or may not have been made: retrying with the same operation id is safe" in said
    assert str(DaemonPaths(home).log) in said and "--no-daemon" in said
    wait_until(lambda: not DaemonPaths(home).running())

    retried = remem(home, *fork, "--json")
    assert retried.returncode == 0, retried.stderr
    assert json.loads(retried.stdout)["created"] is False  # the child the dead daemon made


def test_a_read_the_daemon_died_in_is_said_to_have_died(home: Home, listed_root: tuple[Path, Path]) -> None:
    """A read changes nothing: it is said to have died, with its log, and nothing more."""
    root, workspace = listed_root
    write_session(root, build_session(SessionSpec(seed=4, turns=2, cwd=str(workspace))))
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root)]
    with index_write_held(home):  # the listing waits at its write of the new log's row
        asked = subprocess.Popen(
            [*command, "sessions", "list", "--cwd", str(workspace)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_until(lambda: status(home).get("clients", 0) >= 2, what="the command's connection")
        info = DaemonPaths(home).read_status()
        assert info is not None
        os.kill(info.pid, signal.SIGKILL)
        _, said = asked.communicate(timeout=60)
    assert asked.returncode == 1, said
    assert said.startswith("remem: the daemon died while answering (its log:"), said
    assert "may or may not" not in said and "--no-daemon" in said


def test_a_daemon_whose_memory_folder_became_a_link_can_still_be_asked_and_stopped(
    home: Home, tmp_path: Path
) -> None:
    """Every command is refused while `memory/` is a link (decision 0388), and `daemon status`
    and `daemon stop` were too: the daemon ran on, out of the user's reach."""
    assert remem(home, "daemon", "start").returncode == 0
    moved = home.memory.rename(tmp_path / "memory")
    home.memory.symlink_to(moved)
    refused = remem(home, "memory", "show")
    assert refused.returncode == 2 and f"{home.memory} is a symbolic link" in refused.stderr
    asked = remem(home, "daemon", "status", "--json")
    assert asked.returncode == 0 and json.loads(asked.stdout)["running"], asked.stderr
    stopped = remem(home, "daemon", "stop")
    assert stopped.returncode == 0 and stopped.stdout == "remem daemon stopped\n", stopped.stderr
    assert not DaemonPaths(home, layout=False).running()
    assert home.memory.is_symlink(), "left as it is"


@contextlib.contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """`folder` mounted read-only over itself (root and mounts allowed, else a visible skip)."""
    bound = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if bound.returncode != 0:
        pytest.skip(f"no bind mount here: {bound.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True, capture_output=True)
        yield
    finally:
        subprocess.run(["umount", str(folder)], check=True, capture_output=True)


def test_a_daemon_whose_state_folder_became_read_only_can_still_be_asked_and_stopped(home: Home) -> None:
    """Its lock cannot be opened to be taken, nor its status file removed: `daemon stop` was a
    bug in remem (exit 4) and the daemon ran on."""
    assert remem(home, "daemon", "start").returncode == 0
    with _read_only(home.state):
        asked = remem(home, "daemon", "status", "--json")
        assert asked.returncode == 0 and json.loads(asked.stdout)["running"], asked.stderr
        stopped = remem(home, "daemon", "stop")
        assert stopped.returncode == 0 and stopped.stdout == "remem daemon stopped\n", stopped.stderr
        assert not DaemonPaths(home, layout=False).running()


def test_status_and_stop_of_a_home_whose_state_folder_cannot_be_written_say_no_daemon_runs(
    home: Home,
) -> None:
    """An immutable folder (chattr +i) refuses the lock file with EPERM, not EACCES or EROFS:
    `daemon stop` was an internal error (exit 4) naming daemon.lock."""
    home.ensure_layout()
    with unwritable(home.state):
        asked = remem(home, "daemon", "status")
        stopped = remem(home, "daemon", "stop")
    assert asked.returncode == 1 and asked.stdout.startswith("remem daemon not running"), asked.stderr
    assert (stopped.returncode, stopped.stdout, stopped.stderr) == (0, "remem daemon was not running\n", "")


def test_status_and_stop_of_a_home_folder_never_used_say_no_daemon_runs(tmp_path: Path) -> None:
    """They reach a daemon through the state folder alone, and this one has none yet."""
    empty = Home(tmp_path / "empty")
    empty.root.mkdir()
    asked = remem(empty, "daemon", "status")
    assert asked.returncode == 1 and asked.stdout.startswith("remem daemon not running"), asked.stderr
    stopped = remem(empty, "daemon", "stop")
    assert (stopped.returncode, stopped.stdout, stopped.stderr) == (0, "remem daemon was not running\n", "")


def test_a_fifo_where_the_daemon_log_goes_is_refused_not_waited_on(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opened to write, a FIFO waits for a reader for good: the command that would start the
    daemon, its standard error going to the log, never ended."""
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    fifo = DaemonPaths(home).log
    os.mkfifo(fifo)
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "memory", "show"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as run:
        try:
            _, err = run.communicate(timeout=30)  # a hang guard, not a speed assertion
        except subprocess.TimeoutExpired:
            run.kill()
            pytest.fail(f"it waited on the FIFO at {fifo}")
    assert f"{fifo} is a FIFO, where remem keeps a file; remove it" in err, err
    assert stat.S_ISFIFO(fifo.lstat().st_mode), "left as it is"


def test_a_daemon_log_linked_out_of_the_home_is_refused_untouched(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = DaemonPaths(home)  # its home checked before the link was made
    outside = tmp_path / "outside" / "daemon.log"
    outside.parent.mkdir()
    paths.log.symlink_to(outside)
    said = (
        f"remem's home {home.root} cannot be used: {paths.log} is a symbolic link, and remem reads and "
        "writes only inside its home; move the file it points to into the home, or choose a home that "
        "holds it with --home or $REMEM_HOME"
    )
    try:
        with monkeypatch.context() as patched, pytest.raises(HomeUnusable) as refused:
            patched.setattr(
                daemon_client.subprocess, "Popen", lambda *a, **k: pytest.fail("a daemon was spawned")
            )
            daemon_client._spawn(paths)
        assert str(refused.value) == said
        started = remem(home, "daemon", "start")  # refused before any daemon, in one line
        assert (started.returncode, started.stderr) == (2, f"remem: {said}\n")
        assert not outside.exists(), "nothing created through it"
    finally:
        paths.log.unlink()  # so the fixture can look for a daemon to stop


def test_status_and_stop_with_a_file_where_the_state_folder_goes_say_it_as_every_command_does(
    tmp_path: Path,
) -> None:
    """They look at `state/` without making it, and met the file there as a bug in remem (exit
    4, NotADirectoryError on `state/daemon.lock`); no daemon can run there, and the fix is the
    user's: one line naming the path in the way, exit 2, as `memory show` or `daemon start`."""
    blocked = Home(tmp_path / "blocked")
    blocked.root.mkdir()
    blocked.state.write_text("")
    line = (
        f"remem: remem's home {blocked.root} cannot be used: {blocked.state} cannot be made a folder "
        "(File exists); move what is in the way, or choose another home with --home or $REMEM_HOME\n"
    )
    shown = remem(blocked, "memory", "show")
    assert (shown.returncode, shown.stderr) == (2, line), "the line every command says"
    for asked in (["status"], ["status", "--json"], ["stop"], ["stop", "--json"]):
        said = remem(blocked, "daemon", *asked)
        assert (said.returncode, failure_line(said.stdout, said.stderr, as_json="--json" in asked)) == (
            2,
            line,
        ), asked
    assert blocked.state.is_file(), "left as it is"


def test_a_daemon_whose_idle_time_is_shorter_than_a_start_still_serves_the_command_that_started_it(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It exited before the command that started it connected, which waited 15 s and failed."""
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    home.settings_file.write_text("daemon:\n  idle_minutes: 0.00001\n")  # 0.6 ms
    done = remem(home, "memory", "context")
    assert done.returncode == 0, done.stderr
    wait_until(lambda: not DaemonPaths(home).running(), seconds=30)  # and it exits, idle, soon after


def test_a_clients_hello_is_logged_cut_short_and_once(home: Home) -> None:
    """A hello naming megabytes of harness folders was logged whole, up to sixteen times."""
    assert remem(home, "daemon", "start").returncode == 0
    log = DaemonPaths(home).log
    before = log.stat().st_size
    roots = {"claude-code": [f"/x/{n:07}" * 10 for n in range(30_000)]}  # ~2.4 MB
    hello = {"protocol": 1, "version": "0", "harnessRoots": roots}
    calls(home, [("daemon/hello", hello)] * 3)
    said = log.read_bytes()[before:].decode()
    assert said.count("names other harness folders") == 1 and len(said) < 4000, len(said)
