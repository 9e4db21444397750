"""For tests that stop a command while it writes: a pipe nobody reads, full, so that a write to
it waits for room (seen in the kernel's word for where the command sleeps), drained or never;
and the command ended whatever the test met."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any


def fill(write: int) -> None:
    """Fill the pipe whose writing end is `write`, so that the next write to it waits."""
    os.set_blocking(write, False)
    try:
        while True:
            os.write(write, b"\0" * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(write, True)


def writing_to(pid: int, fd: int) -> bool:
    """Whether process `pid` waits for room in the pipe its file descriptor `fd` writes to, as
    the kernel says where it sleeps and in which call (its first argument: the descriptor)."""
    try:
        call = Path(f"/proc/{pid}/syscall").read_text().split()
        return "pipe_write" in Path(f"/proc/{pid}/wchan").read_text() and call[1:2] == [hex(fd)]
    except OSError:  # exited meanwhile: the wait failed, as the test then says
        return False


def drained(read: int) -> bytes:
    """Everything written to the pipe whose reading end is `read`, until its writers close it."""
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def ended(running: subprocess.Popen[Any]) -> None:
    """`running` ended, killed if a hang guard gave up on it, so that no test leaves it behind."""
    if running.poll() is None:
        running.kill()
        running.wait()


def none_pending(pid: int) -> bool:
    """Whether each signal sent to process `pid` was taken: none waits for one of its threads.
    A stop sent while another is pending may be given to a thread other than the main one, where
    a Python handler does not run until the main thread next wakes."""
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            for line in (task / "status").read_text().splitlines():
                if line.startswith(("SigPnd:", "ShdPnd:")) and int(line.split()[1], 16):
                    return False
    except OSError:  # exited meanwhile: the wait failed, as the test then says
        return False
    return True
