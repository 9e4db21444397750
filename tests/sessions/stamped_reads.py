"""The reads a listing makes besides the logs, as tests watch them: the opens of remem's titles
file and DSH's archive list, seen through Python's audit hook (the real `open` calls), and a
wait until files' stamps are old enough to prove them unchanged."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from remem.daemon.memory.stamps import RACY_NS

WATCHED = ("session-meta.json", "workspace.json")
_opened: list[list[str]] = []  # the names opened while a `watching` block runs


def _heard(event: str, args: tuple[object, ...]) -> None:
    if event == "open" and _opened and isinstance(args[0], str | bytes | os.PathLike):
        name = os.path.basename(os.fsdecode(args[0]))
        if name in WATCHED:
            _opened[-1].append(name)


sys.addaudithook(_heard)  # for good (a hook cannot be removed): it only records inside `watching`


@contextmanager
def watching() -> Iterator[list[str]]:
    _opened.append([])
    try:
        yield _opened[-1]
    finally:
        _opened.pop()


def settle(*paths: Path) -> None:
    """Wait until every file's last change (its ctime) is more than `RACY_NS` old by the clock a
    listing takes its stamps with, so that the next listing's stamps prove the files unchanged.
    What is awaited is time itself: no program can set a ctime back, so only the clock passing
    it settles a file. The sleep is the time left, checked against that clock again, as a sleep
    may end before the realtime clock (slewed by NTP) has moved as far."""
    latest = max(p.stat().st_ctime_ns for p in paths)
    while (left := latest + RACY_NS - time.time_ns()) >= 0:
        time.sleep(left / 1e9)
