"""The worker processes a cold listing starts to read logs, as tests find them: children of this
process by their command line, and the wait until one has the index open."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path


def children(command: bytes) -> list[int]:
    """The live processes this process started whose command line holds `command`."""
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == os.getpid() and command in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
    return found


def workers() -> list[int]:
    return children(b"cold_reads import work")


def until_a_worker_opened(index: Path) -> None:
    deadline = time.monotonic() + 60
    while (pids := workers()) and time.monotonic() < deadline:
        if any(_holds(pid, index) for pid in pids):
            time.sleep(0.2)  # for its "ready" to reach the listing
            return
        time.sleep(0.01)


def _holds(pid: int, path: Path) -> bool:
    """Whether process `pid` has `path` open."""
    with contextlib.suppress(OSError):
        return any(os.readlink(fd) == str(path) for fd in Path(f"/proc/{pid}/fd").iterdir())
    return False
