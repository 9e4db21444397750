"""Odd files where remem reads memory-side files (a FIFO, a link out of the folder, a folder),
and a call run with a deadline that lets a reader stuck on such a FIFO go."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")
DEADLINE_S = 10.0  # a bound on a hang, never a speed assertion: each call here takes milliseconds
OUTSIDE_RECORD = "---\nname: elsewhere\ndescription: Not remem's to show\ntype: user\n---\nOutside.\n"


def within(call: Callable[[], T], *fifos: Path) -> T:
    """`call()`'s result, or what it raised; the test fails if it has not returned by the deadline
    (it opened a FIFO and waits for a writer). `fifos` are then opened for writing once, so the
    stuck reader sees an end of file and lets go of any lock it holds."""
    result: list[T] = []
    raised: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    if thread.is_alive():
        for fifo in fifos:
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(DEADLINE_S)
        pytest.fail(f"still blocked after {DEADLINE_S:g} s: it waits on a FIFO for a writer")
    if raised:
        raise raised[0]
    return result[0]


def put_odd(path: Path, kind: str, tmp_path: Path) -> Path | None:
    """Put a `kind` of odd file at `path` (replacing what is there); the FIFO involved, if any."""
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
        return path
    if kind == "folder":
        path.mkdir()
        return None
    outside = tmp_path / f"outside-{path.name}"
    if kind == "link to an outside fifo":
        os.mkfifo(outside)
        path.symlink_to(outside)
        return outside
    assert kind == "link to an outside file"
    outside.write_text(OUTSIDE_RECORD)
    path.symlink_to(outside)
    return None
