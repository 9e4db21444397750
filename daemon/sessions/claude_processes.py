"""Which Claude Code sessions a live Claude Code process is running, as its home says (decision 0376).

While it runs a session, Claude Code keeps `<home>/sessions/<pid>.json` (`CLAUDE_CONFIG_DIR`,
by default `~/.claude`): its `pid`, the `sessionId` it is running, and `procStart`, the process's
start time as Linux's `/proc/<pid>/stat` says it (its 22nd field, clock ticks since boot); it
removes the file when it exits. It holds no transcript open between writes, so a session whose
process is alive but quiet (a permission prompt, a long tool run) would otherwise look finished
once `sessions.idle_seconds` passed.

`running(homes)` reads each home's `sessions/` folder once (it holds a file per running process,
and whatever a killed one left): only names `<pid>.json` are looked at, only those whose process
is alive (its `/proc/<pid>/stat` reads) are opened, and a file counts only when its `pid` is its
name's, its `procStart` is that process's start time (so a pid reused since is not taken for
it) and, where it names one, its pid namespace is this process's. Each file is opened from the
folder's descriptor without following a link, must be a regular file of at most
`MAX_PID_FILE` bytes and hold a JSON object; anything else is skipped, never an error. The
`sessions/` folder itself is opened from the home without following a link.

Linux only: elsewhere, or where /proc does not show this process's own `stat`, nothing is
running as far as this can tell, and recency alone decides, as before.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ..safe_open import open_folder, open_regular, read_capped

PROC: Final = "/proc"
SESSIONS_FOLDER: Final = "sessions"  # beside `projects` in a Claude Code home
MAX_PID_FILE: Final = 8192  # bytes; Claude Code writes about 600
MAX_PID_FILES: Final = 4096  # names looked at per home: a folder of more is read no further
_PID_FILE = re.compile(r"([1-9][0-9]{0,9})\.json")
_PID_SPACE = re.compile(r"linux:[^:]*:(pid:\[[0-9]+\])")  # Claude Code's `pidDomain` on Linux


@dataclass(frozen=True)
class Running:
    """The Claude Code sessions live processes are running: by home, session id -> pid."""

    homes: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def pid(self, home: Path | str, session_id: str | None) -> int | None:
        """The pid of a live Claude Code process of `home` running `session_id`, or None."""
        if not session_id:
            return None
        return self.homes.get(str(home), {}).get(session_id)


NOTHING: Final = Running()


def home_of(root: Path) -> Path | None:
    """The Claude Code home whose session folder `root` is (`<home>/projects`), else None."""
    return root.parent if root.name == "projects" and root.parent != root else None


def running(homes: Iterable[Path]) -> Running:
    """What the `sessions/` folder of each of `homes` says live Claude Code processes run."""
    space = _own_pid_space()
    if space is None:
        return NOTHING
    found = {str(home): _home_sessions(home, space) for home in homes}
    return Running({home: ids for home, ids in found.items() if ids})


def _own_pid_space() -> str | None:
    """This process's pid namespace (`pid:[N]`), or "" when /proc shows its stat but not its
    namespace; None when /proc does not show this process (not Linux, /proc not mounted)."""
    if _start_time(os.getpid()) is None:
        return None
    try:
        return os.readlink(f"{PROC}/self/ns/pid")
    except OSError:
        return ""


def _home_sessions(home: Path, space: str) -> dict[str, int]:
    """Session id -> pid of each live process `home`'s `sessions/` folder names."""
    try:
        folder = open_folder(home, home / SESSIONS_FOLDER)
    except OSError:  # none, a link, not a folder
        return {}
    ids: dict[str, int] = {}
    try:
        names = os.listdir(folder)[:MAX_PID_FILES]
        for name in sorted(names):
            matched = _PID_FILE.fullmatch(name)
            if matched is None:
                continue
            pid = int(matched.group(1))
            start = _start_time(pid)
            if start is None:  # no such process (any more): a file a killed one left
                continue
            session = _session_of(home, name, pid, start, space)
            if session is not None:
                ids.setdefault(session, pid)
    except OSError:
        return ids
    finally:
        os.close(folder)
    return ids


def _session_of(home: Path, name: str, pid: int, start: str, space: str) -> str | None:
    """The session id the pid file `name` of `home` says process `pid` (started at `start`)
    runs; None when the file is no small regular file of that very process."""
    try:
        with os.fdopen(open_regular(home / SESSIONS_FOLDER / name, root=home), "rb") as handle:
            data = read_capped(handle, MAX_PID_FILE)
    except OSError:  # gone meanwhile, a link, a FIFO or other non-regular file, unreadable
        return None
    if data is None:
        return None
    try:
        record = json.loads(data)
    except ValueError:  # not JSON, not UTF-8
        return None
    if not isinstance(record, dict):
        return None
    session, domain = record.get("sessionId"), record.get("pidDomain")
    if record.get("pid") != pid or record.get("procStart") != start:
        return None
    if not isinstance(session, str) or not session:
        return None
    if isinstance(domain, str) and space:
        said = _PID_SPACE.fullmatch(domain)
        if said is not None and said.group(1) != space:
            return None  # another pid namespace (a container): its pid is not this one's
    return session


def _start_time(pid: int) -> str | None:
    """Process `pid`'s start time as /proc/<pid>/stat says it (field 22, after the command
    name in parentheses, which may hold spaces); None when there is no such process, or it
    has exited and only waits to be reaped (a zombie)."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as handle:
            text = handle.read(4096)
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2 :].split()
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    try:
        return fields[19].decode("ascii")
    except UnicodeDecodeError:
        return None
