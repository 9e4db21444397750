"""Session files and memory files are opened without following a link or waiting on a FIFO
swapped in after the scan that found them."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from remem.daemon.safe_open import NOT_REGULAR, open_regular
from remem.daemon.sessions.errors import SessionLogError
from remem.daemon.sessions.harness_sources import file_digest, read_file
from remem.daemon.sessions.reader import read_session


def _within(seconds: float, call: Callable[[], object]) -> BaseException | None:
    """What `call` raised (None if nothing), failing the test if it has not ended by then."""
    raised: list[BaseException | None] = [None]

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            raised[0] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "it waits on the FIFO for a writer"
    return raised[0]


@pytest.mark.parametrize(
    "read",
    [read_file, file_digest, read_session],
    ids=["harness read", "harness digest", "dsh read"],
)
def test_a_fifo_in_place_of_a_session_file_is_refused_at_once(
    tmp_path: Path, read: Callable[[Path], object]
) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    raised = _within(5, lambda: read(fifo))
    assert isinstance(raised, (OSError, SessionLogError)), raised
    assert NOT_REGULAR in str(raised)


def test_a_link_is_refused_and_a_file_opens(tmp_path: Path) -> None:
    target = tmp_path / "target.jsonl"
    target.write_bytes(b"{}\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    with pytest.raises(OSError) as refused:
        open_regular(link)
    assert refused.value.errno == errno.ELOOP
    fd = open_regular(target)
    try:
        assert os.read(fd, 10) == b"{}\n"
    finally:
        os.close(fd)
