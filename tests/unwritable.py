"""A folder in which no file can be made, even by root: what a read-only mount or a full disk
does to a write there, made on purpose."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def unwritable(folder: Path) -> Iterator[None]:
    """No file can be made in `folder` while this lasts (root ignores mode bits: it is made
    immutable instead, the test skipped where the file system cannot)."""
    if os.geteuid() != 0:
        folder.chmod(0o500)
    elif subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("root cannot make a folder immutable on this file system")
    try:
        yield
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o700)


@contextmanager
def full_disk(folder: Path, room: str = "512k") -> Iterator[Path]:
    """A file system of `room` mounted at `folder` (made), which `fill` fills: the disk a full
    disk is, ENOSPC and all. Skipped where this process may not mount one (no CAP_SYS_ADMIN)."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={room},mode=0700", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"this process cannot mount a tmpfs: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def fill(folder: Path) -> None:
    """Take every block left on `folder`'s file system."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
