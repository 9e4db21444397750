"""The socket folder: never chmod through a squatter's link, never refuse forever."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths, socket_dir

from .helpers import remem

OTHER_UID = 4242


@pytest.fixture
def shared_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A stand-in for the shared /tmp, here and in the daemons the tests start; no runtime dir.
    Short like /tmp: the socket inside must stay within AF_UNIX's 108 bytes, which a folder in
    pytest's tmp_path (longer still under xdist) can pass."""
    # pytest picks its own temp root on first use, from the temp dir of that moment: were that
    # this stand-in, removed after the test, every later test's tmp_path would be gone.
    tmp_path_factory.getbasetemp()
    shared = Path(tempfile.mkdtemp(prefix="remem-t-"))
    shared.chmod(0o777)
    monkeypatch.setenv("TMPDIR", str(shared))
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    yield shared
    shutil.rmtree(shared, ignore_errors=True)


def squatted(shared: Path) -> Path:
    return shared / f"remem-{os.getuid()}"


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path, follow_symlinks=False).st_mode)


def assert_private(folder: Path) -> None:
    st = os.stat(folder, follow_symlinks=False)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700


def test_a_free_shared_folder_is_made_private_and_used(shared_tmp: Path) -> None:
    assert socket_dir() == squatted(shared_tmp)
    assert_private(squatted(shared_tmp))


def test_a_symlink_squatter_never_has_its_target_chmodded(shared_tmp: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim-folder"
    victim.mkdir()
    victim.chmod(0o755)
    squatted(shared_tmp).symlink_to(victim)
    folder = socket_dir()
    assert mode(victim) == 0o755, "the link's target was chmodded"
    assert folder.parent == shared_tmp and folder.name.startswith(f"remem-{os.getuid()}-")
    assert_private(folder)
    assert os.path.islink(squatted(shared_tmp)), "the squatter's link is left alone"


@pytest.mark.skipif(os.getuid() != 0, reason="giving a folder to another user needs root")
def test_a_folder_owned_by_someone_else_is_left_alone(shared_tmp: Path) -> None:
    theirs = squatted(shared_tmp)
    theirs.mkdir(mode=0o777)
    theirs.chmod(0o777)
    os.chown(theirs, OTHER_UID, OTHER_UID)
    folder = socket_dir()
    assert folder != theirs and folder.parent == shared_tmp
    assert_private(folder)
    assert mode(theirs) == 0o777 and theirs.stat().st_uid == OTHER_UID


def test_our_own_folder_with_a_loose_mode_is_tightened(shared_tmp: Path) -> None:
    ours = squatted(shared_tmp)
    ours.mkdir()
    ours.chmod(0o755)
    assert socket_dir() == ours
    assert_private(ours)


def test_a_usable_runtime_dir_is_preferred(
    shared_tmp: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert socket_dir() == runtime / "remem"
    assert_private(runtime / "remem")
    assert not squatted(shared_tmp).exists()


def test_a_runtime_dir_open_to_others_is_not_used(
    shared_tmp: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir()
    runtime.chmod(0o777)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert socket_dir() == squatted(shared_tmp)
    assert not (runtime / "remem").exists() and mode(runtime) == 0o777


@pytest.mark.slow
def test_a_daemon_behind_a_squatted_folder_starts_and_answers(
    shared_tmp: Path, tmp_path: Path, home: Home
) -> None:
    victim = tmp_path / "victim-folder"
    victim.mkdir()
    victim.chmod(0o755)
    squatted(shared_tmp).symlink_to(victim)
    started = remem(home, "daemon", "start", "--json")
    assert started.returncode == 0, started.stderr
    sock = Path(DaemonPaths(home).read_status().socket)  # type: ignore[union-attr]
    assert sock.parent.parent == shared_tmp and sock.parent.name.startswith(f"remem-{os.getuid()}-")
    assert_private(sock.parent)
    assert mode(victim) == 0o755 and not list(victim.iterdir())
    status = remem(home, "daemon", "status", "--json")
    assert json.loads(status.stdout)["pid"] == json.loads(started.stdout)["pid"]
    log = DaemonPaths(home).log.read_text()
    assert f"{squatted(shared_tmp)} is not a folder of this user" in log and f"using {sock.parent}" in log
    assert remem(home, "daemon", "stop").returncode == 0
    assert not sock.parent.exists(), "a fallback folder is removed with its daemon"
