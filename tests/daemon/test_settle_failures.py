"""What settles a crash's leftovers before memory is read (reviews left committing, agent
updates left as intents) never fails the request or the daemon's start: a write the disk
refuses is one warning line, anything else an error with its traceback, and the next reader
tries again."""

from __future__ import annotations

import asyncio
import errno
import logging
import os

import pytest

from remem.daemon.home import Home
from remem.daemon.server import consolidation_methods
from remem.daemon.server.agent_methods import AgentMethods
from remem.daemon.server.consolidation_methods import ConsolidationMethods
from remem.daemon.server.memory_methods import MemoryMethods

FAILURES = [errno.ENOSPC, errno.EIO]  # refused by a full disk; failed otherwise


def failing(code: int) -> OSError:
    return OSError(code, os.strerror(code))


@pytest.mark.parametrize("code", FAILURES)
def test_settling_reviews_that_fails_is_logged_not_raised(
    home: Home, code: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def settle(*args: object) -> None:
        raise failing(code)

    monkeypatch.setattr(consolidation_methods, "settle_committing", settle)
    methods = ConsolidationMethods(home, MemoryMethods(home))
    with caplog.at_level(logging.WARNING, "remem.daemon"):
        asyncio.run(methods.settle())
    [record] = caplog.records
    assert record.levelno == (logging.WARNING if code == errno.ENOSPC else logging.ERROR)
    assert (record.exc_info is None) == (code == errno.ENOSPC)


@pytest.mark.parametrize("code", FAILURES)
def test_settling_agent_updates_that_fails_is_logged_not_raised(
    home: Home, code: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A failure other than a refused write escaped the settle (an `except` raising past its
    sibling), and with it the daemon's start."""
    methods = AgentMethods(MemoryMethods(home))

    def settle(scope: str) -> None:
        raise failing(code)

    monkeypatch.setattr(methods.service, "pending_scopes", lambda: ["global"])
    monkeypatch.setattr(methods.service, "settle", settle)
    with caplog.at_level(logging.WARNING, "remem.daemon"):
        asyncio.run(methods.settle())
    [record] = caplog.records
    assert record.levelno == (logging.WARNING if code == errno.ENOSPC else logging.ERROR)
