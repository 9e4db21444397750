"""The worker processes a cold listing starts to read logs, as tests find them: children of this
process by their command line, and the wait until one has the index open."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from tests.waiting import wait_until


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
    """Wait until a worker has `index` open, or none is left (each ended). A worker opens the
    index at its first share, after it sent the listing its "ready": once it holds the index,
    that message is in the listing's end of their link, where the listing's next look finds it."""
    wait_until(
        lambda: not (pids := workers()) or any(_holds(pid, index) for pid in pids),
        what=f"a cold-read worker to open {index.name}, or every one to end",
        seen=workers,
    )


def _holds(pid: int, path: Path) -> bool:
    """Whether process `pid` has `path` open."""
    with contextlib.suppress(OSError):
        return any(os.readlink(fd) == str(path) for fd in Path(f"/proc/{pid}/fd").iterdir())
    return False
