"""An OSError remem did not foresee while an attempt's worker session starts (EIO from a failing
disk, a bug's EBADF) ends the attempt in its receipt and is then said as a bug, its traceback
kept: it was said as something standing in the way, "at None", to "fix or move away"."""

from __future__ import annotations

import asyncio
import errno
from typing import Any

import pytest

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.consolidation.worker_log import WorkerLog, unstarted
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from tests.fake_openai import FakeOpenAI

from .conftest import Source


def test_what_stands_in_the_way_is_said_and_the_unforeseen_is_not() -> None:
    assert unstarted(OSError(errno.EIO, "Input/output error")) is None
    assert unstarted(OSError(errno.EBADF, "Bad file descriptor")) is None
    said = unstarted(OSError(errno.EEXIST, "File exists"))
    assert said is not None and " at " not in said and "move it away" in said, said
    named = unstarted(FileExistsError(errno.EEXIST, "File exists", "/x/project"))
    assert named is not None and "started at /x/project (File exists)" in named, named


def test_an_unforeseen_failure_ends_the_attempt_and_is_raised(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(WorkerLog, "start", failing)
    with pytest.raises(OSError, match="Input/output error"):
        asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None))
    [receipt] = [ReceiptStore(home).read(path.stem) for path in home.reviews.glob("*.md")]
    assert receipt is not None and receipt.status == Status.INTERNAL_ERROR, receipt
    assert receipt.attempts[-1].status == Status.INTERNAL_ERROR, receipt.attempts
    assert fake.count == 0, "the model was asked"
