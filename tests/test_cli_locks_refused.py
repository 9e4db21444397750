"""A lock the file system refuses (ENOLCK on some network mounts) is said as that, naming the
lock file, its reason and the remedy, never as a lock another process holds: waited for to a
deadline and blamed on "another process", that refusal met every try again, for good. The
refusal is made by the OS's own lock calls, failed in the CLI's and the daemon's processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from tests.mcp.conftest import agent, text_of
from tests.mcp.conftest import put as mcp_put
from tests.scratch import hooked_pythonpath

REFUSED_ENV = "REMEM_TEST_REFUSED_LOCKS"  # lock files whose name starts with it are refused
READ_ONLY_ENV = "REMEM_TEST_READ_ONLY_LOCKS"  # lock files it starts, opened to write: EROFS

HOOK = f"""
import errno, fcntl, os

_refused = os.environ.get("{REFUSED_ENV}")


def _refusing(real):
    def lock(fd, operation, *args):
        number = fd if isinstance(fd, int) else fd.fileno()
        if _refused and os.path.basename(os.readlink(f"/proc/self/fd/{{number}}")).startswith(_refused):
            raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))
        return real(fd, operation, *args)

    return lock


fcntl.flock, fcntl.lockf = _refusing(fcntl.flock), _refusing(fcntl.lockf)

_read_only = os.environ.get("{READ_ONLY_ENV}")
_open = os.open


def _opening(path, flags, *args, **kwargs):
    if _read_only and os.path.basename(path).startswith(_read_only) and flags & os.O_RDWR:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
    return _open(path, flags, *args, **kwargs)


os.open = _opening
"""

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
RECORD = {"name": "prefer-uv", "description": "Use uv, not pip", "type": "feedback", "content": "Faster.\n"}
REFUSED = "cannot be locked: No locks available (ENOLCK); the file system it is on refuses locks: "
REMEDY = "put remem's home on a local disk (--home or $REMEM_HOME)"


@pytest.fixture
def hooked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", hooked_pythonpath(HOOK, "remem-refused-locks-hook-"))


@pytest.fixture
def daemon(home: Home, hooked: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(NO_DAEMON_ENV)
    yield
    remem(home, "daemon", "stop")


def remem(
    home: Home, *args: str, refused: str = "", stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    env = {**os.environ, REFUSED_ENV: refused}
    return subprocess.run(command, input=stdin, capture_output=True, text=True, env=env, timeout=120)


def put(home: Home, cwd: Path, *, refused: str = "") -> subprocess.CompletedProcess[str]:
    changes = json.dumps([{"action": "put", "record": RECORD}])
    args = ("--cwd", str(cwd), "--expected-revision", EMPTY, "--changes", "-")
    return remem(home, "memory", "apply", *args, refused=refused, stdin=changes)


def test_a_scope_lock_refused_is_said_and_nothing_is_written(
    home: Home, tmp_path: Path, hooked: None
) -> None:
    done = put(home, tmp_path, refused="ws-")
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    [lock] = home.locks.glob("ws-*.lock")
    assert f"{lock}: this file {REFUSED}{REMEDY} [remem/unusable-lock]" in done.stderr
    assert not list(home.root.rglob(f"{RECORD['name']}.md"))


def test_a_history_lock_refused_is_said_at_once_not_blamed_on_another_process(
    home: Home, tmp_path: Path, hooked: None
) -> None:
    done = put(home, tmp_path, refused="history")
    assert done.returncode == 0, done.stderr
    # Said whole, the remedy too, however long the home's path (a reason was cut at 200 characters).
    assert f"{home.locks / 'history.lock'} {REFUSED}{REMEDY})" in done.stderr
    assert "another process" not in done.stderr


@pytest.mark.parametrize("lock", ["daemon", "spawn"])
def test_a_daemon_lock_refused_is_said_by_the_command_that_starts_it(
    home: Home, daemon: None, lock: str
) -> None:
    done = remem(home, "memory", "show", "--cwd", str(home.root.parent), refused=lock)
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"remem: the remem daemon could not be started: {home.state / f'{lock}.lock'} {REFUSED}{REMEDY}\n"
    )


def test_a_refused_daemon_lock_in_a_read_only_state_folder_is_said_not_taken_for_a_daemon(
    home: Home, tmp_path: Path, hooked: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    home.ensure_layout()  # as any write lays it out (a read of a fresh home makes nothing, 0499)
    (home.state / "daemon.lock").touch()
    monkeypatch.setenv(READ_ONLY_ENV, "daemon")
    done = remem(home, "daemon", "stop", refused="daemon")
    assert done.returncode == 2
    assert done.stderr == f"remem: {home.state / 'daemon.lock'} {REFUSED}{REMEDY}\n"


def test_the_daemon_says_a_refused_lock_and_keeps_serving(home: Home, tmp_path: Path, daemon: None) -> None:
    assert remem(home, "daemon", "start", refused="ws-").returncode == 0
    done = put(home, tmp_path)
    assert done.returncode == 2
    assert f"this file {REFUSED}{REMEDY} [remem/unusable-lock]" in done.stderr
    assert not list(home.root.rglob(f"{RECORD['name']}.md"))
    status = remem(home, "daemon", "status")
    assert status.returncode == 0 and "remem daemon running" in status.stdout


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["daemon", "no-daemon"])
async def test_an_agent_is_told_a_refused_lock_needs_a_local_disk_not_a_file_removed(
    home: Home, tmp_path: Path, hooked: None, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv(REFUSED_ENV, "agent-")
    options = ("--no-daemon",) if mode == "no-daemon" else ()
    try:
        async with agent(home, tmp_path, options=options) as session:
            await session.context()
            refused = await session.update(mcp_put("alpha"))
    finally:
        if mode == "daemon":
            remem(home, "daemon", "stop")
    said = text_of(refused)
    assert refused.is_error
    assert "Ask the user to put remem's home on a local disk, then try again." in said
    assert "remove" not in said and str(home.root) not in said
