"""Whether a live process other than this one holds a file open for writing, as Linux's /proc shows.

One question, asked by consolidation when it decides whether a session is live (decision 0357):
Codex keeps its rollout open for writing for the whole session, so a quiet rollout that a live
process still holds is still being written. The answer is a pid, None (no process this one may
inspect holds it open for writing), or `UNKNOWN` where /proc cannot tell: another OS, /proc not
mounted, the file not openable, or more descriptors than `MAX_DESCRIPTORS` to look through.

How: the file is opened once (never through a link, `safe_open`) and its name as the kernel
spells it is read back from /proc/self/fd, with its inode. Then every process's /proc/<pid>/fd
is listed and each descriptor's link read (`readlink`, which reads no target: nothing outside
/proc is opened, followed or stat'ed). Only a descriptor whose link is that very name has its
/proc/<pid>/fdinfo read: its access mode (write-only or read-write counts, read-only does not)
and, where the kernel shows it, its inode (which must be the file's).

Cost: one `readlink` per descriptor of every process this one may inspect (the user's own; the
others' /proc/<pid>/fd refuse, `PermissionError`, and are skipped), at most `MAX_DESCRIPTORS`
(65,536) of them, past which the answer is `UNKNOWN`: about 7 µs each in CPython, so 3 ms for 75
processes holding 560 descriptors and never much more than half a second. It is asked once per
consolidation request, never by a listing or the tree. Limits: a process in another mount namespace (a
container) sees the file under another name and is not found; a harness that opens, appends and
closes for each write is seen only while it writes. Nothing is logged, no path and no content.
"""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Final

from ..safe_open import open_regular

PROC: Final = "/proc"
MAX_DESCRIPTORS: Final = 1 << 16  # descriptors looked through before the answer is UNKNOWN
_ACCESS_MODE: Final = 0o3  # O_ACCMODE: the access bits of fdinfo's octal `flags`
_WRITING: Final = frozenset({os.O_WRONLY, os.O_RDWR})


class Unknown(Enum):
    """/proc cannot tell."""

    UNKNOWN = "unknown"


UNKNOWN: Final = Unknown.UNKNOWN


def open_writer(path: Path) -> int | None | Unknown:
    """The pid of a live process, other than this one, that holds the regular file at `path` open
    for writing; None when no process this one may inspect does; `UNKNOWN` where /proc cannot tell."""
    own = _kernel_name(path)
    if own is None:
        return UNKNOWN
    name, inode = own
    try:
        pids = [int(entry) for entry in os.listdir(PROC) if entry.isdigit()]
    except OSError:
        return UNKNOWN
    budget, this = MAX_DESCRIPTORS, os.getpid()
    for pid in pids:
        if pid == this:
            continue
        found, budget = _holds(pid, name, inode, budget)
        if found:
            return pid
        if budget < 0:
            return UNKNOWN
    return None


def _kernel_name(path: Path) -> tuple[str, int] | None:
    """The file's name as /proc links spell it, and its inode; None when it cannot be opened or
    /proc does not show this process's descriptors."""
    try:
        fd = open_regular(path)
    except OSError:
        return None
    try:
        return os.readlink(f"{PROC}/self/fd/{fd}"), os.fstat(fd).st_ino
    except OSError:
        return None
    finally:
        os.close(fd)


def _holds(pid: int, name: str, inode: int, budget: int) -> tuple[bool, int]:
    """Whether process `pid` has a descriptor open for writing on the file `name` (of `inode`),
    and what is left of `budget` once its descriptors are looked through (below 0: it ran out)."""
    try:
        folder = os.open(f"{PROC}/{pid}/fd", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # another user's process (PermissionError), or one that exited meanwhile
        return False, budget
    try:
        try:
            descriptors = os.listdir(folder)
        except OSError:
            return False, budget
        for fd in descriptors:
            budget -= 1
            if budget < 0:
                return False, budget
            try:
                target = os.readlink(fd, dir_fd=folder)
            except OSError:  # closed meanwhile
                continue
            if target == name and _writes(pid, fd, inode):
                return True, budget
        return False, budget
    finally:
        os.close(folder)


def _writes(pid: int, fd: str, inode: int) -> bool:
    """Whether `pid`'s descriptor `fd` is open for writing (write-only or read-write) on `inode`,
    as its fdinfo says (`flags:` in octal; `ino:` where the kernel shows it, Linux 5.14 on)."""
    try:
        with open(f"{PROC}/{pid}/fdinfo/{fd}", encoding="ascii") as info:
            fields = dict(line.split(":", 1) for line in info if ":" in line)
        flags = int(fields["flags"].strip(), 8)
        shown = fields.get("ino")
        same = shown is None or int(shown.strip()) == inode
    except (OSError, KeyError, ValueError):  # closed meanwhile, or not as Linux writes it
        return False
    return same and (flags & _ACCESS_MODE) in _WRITING
