"""A child process that holds a file open, for tests of who writes a session's file."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_HOLDER = "import sys\nf = open(sys.argv[1], sys.argv[2])\nprint('open', flush=True)\nsys.stdin.read()\n"


@contextmanager
def holding(path: Path, mode: str) -> Iterator[subprocess.Popen[str]]:
    """A child process holding `path` open in `mode` ("a": for writing, "r": only reading) until
    the block ends or `release` lets it go."""
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "open\n"
        yield child
    finally:
        release(child)


def release(child: subprocess.Popen[str]) -> None:
    """Let the child close the file and exit; wait for it."""
    if child.stdin is not None and not child.stdin.closed:
        child.stdin.close()
    child.wait(timeout=30)
