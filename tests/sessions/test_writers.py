"""`open_writer`: a live process other than this one holding a file open for writing, from /proc.

Write-only (append) and read-write descriptors count, read-only ones do not, nor this process's
own; a process gone, a file replaced at the same path, a process it may not inspect and a
path that is a link are none of its business; without /proc, or past its budget, it answers
`UNKNOWN`.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.sessions import writers
from remem.daemon.sessions.writers import UNKNOWN, open_writer
from tests.sessions.holders import holding

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc tells on Linux only")


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b'{"type":"session_meta"}\n')
    return path


@linux
@pytest.mark.parametrize("mode", ["a", "r+", "w"])
def test_a_process_holding_the_file_for_writing_is_named_until_it_exits(log: Path, mode: str) -> None:
    assert open_writer(log) is None
    with holding(log, mode) as child:
        assert open_writer(log) == child.pid
    assert open_writer(log) is None, "gone with its process"


@linux
def test_a_reader_and_this_process_itself_do_not_count(log: Path) -> None:
    with holding(log, "r"), open(log, "a"):  # a child reading, this process writing
        assert open_writer(log) is None


@linux
def test_a_writer_of_the_file_that_was_replaced_at_the_path_does_not_count(log: Path, tmp_path: Path) -> None:
    with holding(log, "a") as child:
        assert open_writer(log) == child.pid
        fresh = tmp_path / "fresh.jsonl"
        fresh.write_bytes(b"{}\n")
        os.replace(fresh, log)  # the held file is now unlinked: another file has its name
        assert open_writer(log) is None


@linux
def test_a_link_is_not_followed_and_another_file_held_does_not_count(log: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.jsonl"
    link.symlink_to(log)
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"{}\n")
    with holding(log, "a"), holding(other, "a") as child:
        assert open_writer(link) is UNKNOWN, "the path is a link: nothing to ask /proc about"
        assert open_writer(other) == child.pid


@linux
def test_processes_it_may_not_inspect_are_skipped(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def refusing(path: str, flags: int, *args: Any, **kwargs: Any) -> int:
        if (
            str(path).startswith(f"{writers.PROC}/")
            and str(path).endswith("/fd")
            and "/self/" not in str(path)
        ):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(path, flags, *args, **kwargs)

    with holding(log, "a"):
        monkeypatch.setattr(writers.os, "open", refusing)
        assert open_writer(log) is None, "another user's process: not seen, no error"


def test_without_proc_the_answer_is_unknown(
    log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writers, "PROC", str(tmp_path / "no-proc"))
    assert open_writer(log) is UNKNOWN
    assert open_writer(tmp_path / "missing.jsonl") is UNKNOWN


@linux
def test_past_its_budget_of_descriptors_the_answer_is_unknown(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with holding(log, "a") as child:
        assert open_writer(log) == child.pid
        monkeypatch.setattr(writers, "MAX_DESCRIPTORS", 0)
        assert open_writer(log) is UNKNOWN, "a bounded cost: it stops and says it cannot tell"
