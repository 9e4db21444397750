"""A configured session root that cannot be looked into (its folder unsearchable) is said
unreadable in a listing while the daemon serves: looking for a harness's folders in it raised as
the daemon started (`PermissionError`), exit 4 at every spawn, every command failing. One that no
path can be (a NUL character in it, which a YAML string may hold) is refused by the settings."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.permissions import PAST_MASK, bound_by_permissions, effective

from .capped_log import remem_logging_capped


def configure(home: Home, root: str) -> None:
    home.settings_file.write_text(
        f"daemon:\n  idle_minutes: 2\nsessions:\n  roots:\n    - {json.dumps(root)}\n"
    )


def served(home: Home) -> tuple[str, dict[str, object]]:
    """What `sessions list` says (through the daemon: its root's errors on standard error),
    and the daemon's watch status."""
    listed = remem_logging_capped(home, "sessions", "list")
    assert listed.returncode == 0, listed.stderr
    status = remem_logging_capped(home, "daemon", "status", "--json")
    assert status.returncode == 0, status.stderr
    return listed.stderr + listed.stdout, json.loads(status.stdout)["watch"]


def test_a_root_holding_a_nul_is_refused_by_the_settings(home: Home, tmp_path: Path) -> None:
    """No path can hold a NUL: the settings refuse it where they are read, before the daemon
    looks in any root (argv and the environment cannot carry one: no other way in)."""
    root = f"{tmp_path / 'sessions'}\0x"
    configure(home, root)
    try:
        said = remem_logging_capped(home, "sessions", "list")
        assert said.returncode == 2, said
        assert f"sessions.roots.0: {root!r} holds a NUL character, which no file name can" in said.stderr, (
            said
        )
    finally:
        remem_logging_capped(home, "daemon", "stop")


@pytest.fixture
def bound_start(home: Home) -> Iterator[subprocess.CompletedProcess[str]]:
    """`daemon start`, its daemon bound by permissions also when run as root."""
    privileged = os.geteuid() == 0
    try:
        started = remem_logging_capped(
            home, "daemon", "start", preexec=bound_by_permissions if privileged else None
        )
    except subprocess.SubprocessError as error:
        pytest.skip(f"run as root, which cannot give up its way past permissions here: {error}")
    try:
        info = DaemonPaths(home).read_status()
        if privileged and info is not None and (held := effective(info.pid) & PAST_MASK):
            pytest.skip(f"run as root, whose daemon holds its way past permissions still (CapEff {held:#x})")
        yield started
    finally:
        remem_logging_capped(home, "daemon", "stop")


@pytest.fixture
def unsearchable(home: Home, tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "sessions"
    root.mkdir()
    configure(home, str(root))
    root.chmod(0)
    try:
        yield root
    finally:
        root.chmod(0o700)


def test_an_unsearchable_root_is_said_unreadable_and_the_daemon_serves(
    home: Home, unsearchable: Path, bound_start: subprocess.CompletedProcess[str]
) -> None:
    assert bound_start.returncode == 0, bound_start.stderr  # PermissionError: exit 4
    listed, _ = served(home)
    assert "0 session(s), 1 unreadable" in listed, listed
