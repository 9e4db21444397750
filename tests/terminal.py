"""A command run in a terminal of its own (a pty), as a login shell runs it: closing the
terminal's other end (`os.close(master)`) hangs it up, as closing the window does: SIGHUP, then
every write to it fails (EIO)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import termios
from typing import Any


def in_a_terminal(command: list[str], **popen: Any) -> tuple[subprocess.Popen[bytes], int]:
    """`command` started with a pty as its standard streams and controlling terminal; the
    process, and the terminal's other end (read what it writes there; close it to hang up)."""
    master, terminal = os.openpty()
    try:
        running = subprocess.Popen(
            command, stdin=terminal, stdout=terminal, stderr=terminal, start_new_session=True,
            preexec_fn=_take_the_terminal, **popen,
        )  # fmt: skip
    finally:
        os.close(terminal)
    return running, master


def _take_the_terminal() -> None:
    """In the child, a session leader already: its standard input made its controlling
    terminal, whose hangup it is then sent."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def read_until(master: int, said: bytes) -> None:
    """Read the terminal until the command has written `said` there."""
    seen = b""
    while said not in seen:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the command ended, its terminal closed
            chunk = b""
        assert chunk, f"the command ended before saying {said!r}: {seen!r}"
        seen += chunk
