"""A bug in a handler and something in the way in the home, met by the daemon: each is one line
with the documented exit code, never a traceback, and the daemon goes on serving."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any, NoReturn

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home, HomeUnusable
from remem.daemon.locks import try_file_lock
from remem.daemon.protocol.rpc import SESSION_REFUSED, RpcError
from remem.daemon.server.process import Daemon, HomeLock
from remem.daemon.server.running_settings import RunningSettings
from remem.daemon.server.runtime import DaemonPaths
from remem.daemon.server.session_methods import SessionMethods
from tests.failure_said import failure_line

from .helpers import remem

pytestmark = pytest.mark.slow


def through_a_daemon_here(home: Home, *args: str) -> tuple[int, str, str]:
    """`remem ARGS` through a daemon served by this process (so a test may patch its handlers),
    the command run in a worker thread as a client of it."""

    async def serve_and_run() -> tuple[int, str, str]:
        paths = DaemonPaths(home)
        held = try_file_lock(paths.lock)
        assert held is not None, "no other daemon serves this home"
        daemon = Daemon(home, RunningSettings(home))
        serving = asyncio.create_task(daemon.serve(HomeLock(paths.lock, held)))
        try:
            while paths.read_status() is None:
                assert not serving.done(), serving
                await asyncio.sleep(0.02)
            result = await asyncio.to_thread(CliRunner().invoke, cli, ["--home", str(home.root), *args])
        finally:
            daemon.stop()
            await serving
            held.release()
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.stdout, result.stderr

    return asyncio.run(serve_and_run())


def test_a_daemons_internal_error_is_one_line_naming_where_it_logs(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)

    async def broken(self: SessionMethods, params: Any) -> NoReturn:
        raise RuntimeError("a bug in the tree")

    monkeypatch.setattr(SessionMethods, "tree", broken)
    for as_json in ([], ["--json"]):
        code, out, err = through_a_daemon_here(home, "sessions", "tree", "--cwd", str(tmp_path), *as_json)
        assert code == 4
        # Served in this process, whose standard error is its log: a daemon run in the foreground.
        assert failure_line(out, err, as_json=bool(as_json)) == (
            "remem: the daemon failed on sessions/tree, a bug in remem; see the standard error of "
            f"`remem daemon run` (pid {os.getpid()}), which runs the daemon in the foreground\n"
        )
    code, out, _ = through_a_daemon_here(home, "sessions", "list", "--json")
    assert code == 0 and json.loads(out)["sessions"] == [], "the daemon serves the next request"


def test_something_in_the_way_in_the_home_is_said_as_without_the_daemon(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A home the command found usable, that a handler of the daemon then finds unusable (a link
    made meanwhile): the same line and exit code as the command's own check gives."""
    monkeypatch.delenv(NO_DAEMON_ENV)
    in_the_way = f"remem's home {home.root} cannot be used: {home.root / 'history'} is a symbolic link"

    def unusable(self: object, *args: object) -> NoReturn:
        raise HomeUnusable(in_the_way)

    monkeypatch.setattr("remem.daemon.server.memory_methods.MemoryMethods.read_global", unusable)
    code, out, err = through_a_daemon_here(home, "memory", "show", "--cwd", str(tmp_path))
    assert (code, out, err) == (2, "", f"remem: {in_the_way}\n")


def test_a_link_made_in_the_home_while_the_daemon_runs_is_named_not_an_internal_error(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    assert remem(home, "daemon", "start").returncode == 0
    locks, moved = home.locks, tmp_path / "locks-elsewhere"
    linked = f"remem's home {home.root} cannot be used: {locks} is a symbolic link"

    async def calls() -> list[Any]:
        client = await AsyncDaemonClient.open(home)  # connected while the home is usable
        answers: list[Any] = []
        try:
            locks.rename(moved)
            locks.symlink_to(moved)
            for method, params in (
                ("sessions/list", {}),
                ("sessions/tree", {"cwd": str(tmp_path)}),
                ("consolidation/settings/read", {}),
            ):
                try:
                    answers.append(await client.call(method, params))
                except RpcError as exc:
                    answers.append(exc)
            locks.unlink()
            moved.rename(locks)
            answers.append(await client.call("sessions/list", {}))
        finally:
            await client.close()
        return answers

    listed, tree, settings, again = asyncio.run(calls())
    for refused in (listed, tree):
        assert isinstance(refused, RpcError) and refused.code == SESSION_REFUSED, refused
        assert refused.data == {"code": "INVALID"} and refused.message.startswith(linked)
    # A read of the settings takes no lock and makes nothing (decision 0487): a linked locks folder
    # does not stop it.
    assert not isinstance(settings, RpcError) and settings["provider"], settings
    assert again == {"sessions": [], "errors": []}, "the daemon serves the home once it is usable"
    assert "Traceback" not in DaemonPaths(home).log.read_text()
