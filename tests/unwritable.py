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
