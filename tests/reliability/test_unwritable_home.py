"""An existing home remem cannot write in (a read-only mount, a folder not the user's) is named,
exit 2, as a home that cannot be made is: never an internal error.

Run as root (as in CI), no folder is unwritable by its mode, and mounting needs privileges: a
read-only mount, and a folder the user cannot write in, are simulated where the system call
refuses, in this process.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import NoReturn

import pytest

from remem.daemon.cli import main
from remem.daemon.home import Home

READ_ONLY = os.strerror(errno.EROFS)


def _remem(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    """`remem memory show` run in this process as from a shell: exit code, stdout, stderr."""
    command = ["remem", "--home", str(home.root), "--no-daemon", "memory", "show", "--cwd", str(tmp_path)]
    monkeypatch.setattr(sys, "argv", command)
    with pytest.raises(SystemExit) as exited:
        main()
    return (exited.value.code, *capsys.readouterr())  # type: ignore[return-value]


def _said(home: Home, folder: Path, reason: str) -> str:
    return (
        f"remem: remem's home {home.root} cannot be used: {folder} cannot be written ({reason}); "
        "let your user write in it (on a file system mounted read-write), or choose another home "
        "with --home or $REMEM_HOME\n"
    )


def test_a_loose_home_on_a_read_only_mount_is_named(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Made 0755 by hand: remem tightens it to 0700, which a read-only file system refuses."""
    home.ensure_layout()
    home.root.chmod(0o755)

    def refused(fd: int, mode: int) -> NoReturn:
        raise OSError(errno.EROFS, READ_ONLY)

    monkeypatch.setattr(os, "fchmod", refused)
    assert _remem(home, tmp_path, monkeypatch, capsys) == (2, "", _said(home, home.root, READ_ONLY))


def test_a_private_home_on_a_read_only_mount_is_named(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Already 0700, nothing is tightened: the first write (a lock file) would meet the mount."""
    home.ensure_layout()
    real_access, real_statvfs, real_open = os.access, os.statvfs, os.open
    mount = home.root

    def on_mount(path: object) -> bool:
        return isinstance(path, (str, Path)) and Path(path).is_relative_to(mount)

    def access(path: str | Path, mode: int, **kwargs: bool) -> bool:
        return not (mode & os.W_OK and on_mount(path)) and real_access(path, mode, **kwargs)

    def statvfs(path: str | Path) -> os.statvfs_result | SimpleNamespace:
        return SimpleNamespace(f_flag=os.ST_RDONLY) if on_mount(path) else real_statvfs(path)

    def open_(path: str | Path, flags: int, *args: object, **kwargs: object) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and on_mount(path):
            raise OSError(errno.EROFS, READ_ONLY, str(path))
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setattr(os, "statvfs", statvfs)
    monkeypatch.setattr(os, "open", open_)
    assert _remem(home, tmp_path, monkeypatch, capsys) == (2, "", _said(home, mount, READ_ONLY))


def test_a_home_folder_the_user_cannot_write_in_is_named(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home.ensure_layout()
    if os.geteuid() == 0:  # root writes in any folder whatever its mode: the kernel's answer to another user
        real_access = os.access
        denied = str(home.state)
        monkeypatch.setattr(
            os,
            "access",
            lambda path, mode, **kw: (
                not (mode & os.W_OK and str(path) == denied) and real_access(path, mode, **kw)
            ),
        )
    home.state.chmod(0o500)
    try:
        said = _said(home, home.state, os.strerror(errno.EACCES))
        assert _remem(home, tmp_path, monkeypatch, capsys) == (2, "", said)
    finally:
        home.state.chmod(0o700)


def test_a_writable_home_still_works(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home.ensure_layout()
    home.root.chmod(0o755)
    code, out, err = _remem(home, tmp_path, monkeypatch, capsys)
    assert (code, err) == (0, "") and "Global memory" in out
    assert home.root.stat().st_mode & 0o777 == 0o700, "tightened as before"
