"""Permissions that bind root too: the capabilities that let root past them (`PAST_PERMISSIONS`),
given up in a process before it runs a program, or handed on; modes set for a test; and `remem`
(and its daemon) run bound by them."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.cli_process import remem

_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 2, 4
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2
PAST_PERMISSIONS = (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH)
PAST_MASK = sum(1 << capability for capability in PAST_PERMISSIONS)
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


_LIBC = ctypes.CDLL(None, use_errno=True)


def _prctl(*arguments: int) -> None:
    if _LIBC.prctl(*arguments, *[0] * (5 - len(arguments))) != 0:
        raise OSError(ctypes.get_errno(), f"prctl{arguments}")


def set_inheritable(change: Callable[[int], int]) -> None:
    """This process's inheritable capabilities set to `change` of them (the first 32, which
    hold both of root's ways past permissions)."""
    header, data = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if _LIBC.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    data[0].inheritable = change(data[0].inheritable)
    if _LIBC.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def raise_ambient(capability: int) -> None:
    _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE, capability)


def bound_by_permissions() -> None:
    """In the server's process before it starts: root's way past permissions dropped from every
    set the program it runs takes capabilities from. Root's program is permitted what the
    bounding set holds, and besides what the inheritable and the ambient sets hold, so where
    the runner's hold them (older Docker, some CI) the bounding set alone let them through."""
    _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
    set_inheritable(lambda held: held & ~PAST_MASK)
    for capability in PAST_PERMISSIONS:
        _prctl(_PR_CAPBSET_DROP, capability)


def as_user(
    command: list[str], environment: dict[str, str], given: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`command` run as a user file modes bind, `given` on its standard input: root without its
    ways past them (skipped, saying why, where root may not give them up)."""
    privileged = os.geteuid() == 0
    try:
        return subprocess.run(
            command, input=given, capture_output=True, text=True, env=environment, timeout=120,
            preexec_fn=bound_by_permissions if privileged else None,
        )  # fmt: skip
    except subprocess.SubprocessError as error:  # root without CAP_SETPCAP, in some containers
        pytest.skip(f"run as root, which cannot give up its way past permissions here: {error}")


def effective(pid: int) -> int:
    """The effective capabilities of the process `pid`, as its status tells."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("CapEff:")).split()[1], 16)


@contextmanager
def modes(*set_to: tuple[Path, int]) -> Iterator[None]:
    """Each path given its mode for the test, and back to what it was after (so that it can be
    cleaned up, as any user)."""
    before = [(path, path.stat().st_mode) for path, _ in set_to]
    for path, mode in set_to:
        path.chmod(mode)
    try:
        yield
    finally:
        for path, mode in reversed(before):
            path.chmod(mode)


def remem_bound(
    home: Home, *args: str, daemon: bool = False, given: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`remem ARGS` (through the daemon, with `daemon`) as a user file modes bind, `given` on its
    standard input."""
    environment = {**os.environ}
    if daemon:
        environment.pop(NO_DAEMON_ENV, None)
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    return as_user(command, environment, given)


@contextmanager
def daemon_bound(home: Home) -> Iterator[None]:
    """A daemon of `home` started as a user file modes bind, stopped after (skipped where root's
    daemon still holds its way past them)."""
    try:
        started = remem_bound(home, "daemon", "start", daemon=True)
        assert started.returncode == 0, started.stderr
        info = DaemonPaths(home).read_status()
        if os.geteuid() == 0 and info is not None and (held := effective(info.pid) & PAST_MASK):
            pytest.skip(f"run as root, whose daemon holds its way past permissions still (CapEff {held:#x})")
        yield
    finally:
        remem(home, "daemon", "stop")
