"""A socket's path holds at most 107 bytes (103 on macOS): a deep XDG_RUNTIME_DIR or TMPDIR is
passed over for a folder it fits in, and when none can be had the daemon says which variable to
change, never `AF_UNIX path too long`."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server import runtime
from remem.daemon.server.runtime import DaemonPaths, socket_dir

from .helpers import remem

DEEP = 140  # characters of a folder's name: deeper than any socket path can be


@pytest.fixture
def short(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A stand-in for /tmp, the short folder a socket falls back to; no runtime dir."""
    folder = Path(tempfile.mkdtemp(prefix="remem-s-"))
    folder.chmod(0o777)
    monkeypatch.setattr(runtime, "SHORT_TEMP", folder, raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def deep_folder(parent: Path, letter: str) -> Path:
    folder = parent / (letter * DEEP)
    folder.mkdir(mode=0o700, parents=True)
    return folder


def deep_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    temp = deep_folder(tmp_path, "t")
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


def fits(path: Path) -> bool:
    return len(os.fsencode(path)) <= runtime.SOCKET_PATH_MAX


def assert_private(folder: Path) -> None:
    st = os.stat(folder, follow_symlinks=False)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700


def test_a_runtime_dir_too_deep_for_a_socket_is_passed_over_for_the_temp_dir(
    short: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep_folder(tmp_path, "x")))
    monkeypatch.setenv("TMPDIR", str(short))
    monkeypatch.setattr(tempfile, "tempdir", str(short))
    assert socket_dir() == short / f"remem-{os.getuid()}"


def test_a_temp_dir_too_deep_for_a_socket_gives_way_to_the_short_one(
    short: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = deep_temp(tmp_path, monkeypatch)
    folder = socket_dir()
    assert folder == short / f"remem-{os.getuid()}"
    assert_private(folder)
    assert list(temp.iterdir()) == [], "nothing was made in the deep temp dir"


def test_a_squatted_name_in_the_short_folder_gets_a_fresh_folder_there(
    short: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep_temp(tmp_path, monkeypatch)
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    (short / f"remem-{os.getuid()}").symlink_to(victim)
    folder = socket_dir()
    assert folder.parent == short and folder.name.startswith(f"remem-{os.getuid()}-")
    assert_private(folder)
    assert stat.S_IMODE(victim.stat().st_mode) == 0o755, "the squatter's target is left alone"


def test_a_home_gets_a_socket_path_that_fits_with_both_folders_too_deep(
    short: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Home
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep_folder(tmp_path, "x")))
    deep_temp(tmp_path, monkeypatch)
    sock = DaemonPaths(home).socket
    assert fits(sock) and sock.parent == short / f"remem-{os.getuid()}"


def test_when_no_folder_fits_the_error_names_the_variable_to_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = deep_temp(tmp_path, monkeypatch)
    monkeypatch.setattr(runtime, "SHORT_TEMP", deep_folder(tmp_path, "s"), raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    with pytest.raises(runtime.NoSocketFolder) as raised:  # a home in the way: one line, exit 2
        socket_dir()
    said = str(raised.value)
    assert "\n" not in said and str(temp) in said and "set TMPDIR to a short folder" in said
    assert list(temp.iterdir()) == []


@pytest.mark.slow
def test_a_daemon_with_a_deep_runtime_dir_and_temp_dir_listens_and_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Home
) -> None:
    """The real fallback, /tmp, as the daemon finds it: clients take its socket from the status file."""
    monkeypatch.delenv(NO_DAEMON_ENV)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep_folder(tmp_path, "x")))
    monkeypatch.setenv("TMPDIR", str(deep_folder(tmp_path, "t")))
    started = remem(home, "daemon", "start", "--json")
    assert started.returncode == 0, started.stderr
    sock = Path(DaemonPaths(home).read_status().socket)  # type: ignore[union-attr]
    assert fits(sock) and sock.parent.parent == Path("/tmp"), sock
    assert_private(sock.parent)
    status = remem(home, "daemon", "status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["pid"] == json.loads(started.stdout)["pid"]
    listed = remem(home, "sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert remem(home, "daemon", "stop").returncode == 0
    assert not sock.exists()
