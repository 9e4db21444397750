"""A daemon whose process moves a memory folder aside (or puts a copy of it in its place, as a
sync tool does) when a commit reaches a named fault point: a hook loaded at its start
(`sitecustomize`, in the daemon's process only; the test talks to it over its socket)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from tests.daemon.helpers import remem
from tests.scratch import hooked_pythonpath

MOVE_ENV = "REMEM_TEST_MOVE_AT"
HOOK = """
import os, shutil

_point, _folder, _how = os.environ["REMEM_TEST_MOVE_AT"].split(os.pathsep)
import remem.daemon.faults as _faults

_reached = _faults.faultpoint
_done = []


def _moving(name):
    _reached(name)
    if name == _point and not _done:
        _done.append(True)
        if _how == "copy":
            shutil.copytree(_folder, _folder + ".copy", symlinks=True)
        os.rename(_folder, _folder + ".moved")
        if _how == "copy":
            os.rename(_folder + ".copy", _folder)


_faults.faultpoint = _moving
"""


@pytest.fixture
def daemon_env(home: Home, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Requests through a daemon that loads the hook; it is stopped after the test."""
    monkeypatch.setenv("PYTHONPATH", hooked_pythonpath(HOOK, "remem-move-hook-"))
    monkeypatch.delenv(NO_DAEMON_ENV)
    yield
    monkeypatch.delenv(MOVE_ENV, raising=False)
    remem(home, "daemon", "stop")


def move_at(monkeypatch: pytest.MonkeyPatch, point: str, folder: Path, how: Literal["move", "copy"]) -> None:
    """At `point`, move `folder` aside; with "copy", put a copy of it in its place."""
    monkeypatch.setenv(MOVE_ENV, os.pathsep.join([point, str(folder), how]))


def run(home: Home, session: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A `consolidation/run`, and the `consolidation/finished` another client heard."""
    heard: list[tuple[str, dict[str, Any]]] = []

    def finished() -> list[dict[str, Any]]:
        return [p for m, p in heard if m == "consolidation/finished"]

    async def scenario() -> dict[str, Any]:
        listening = await AsyncDaemonClient.open(home, listener=lambda m, p: heard.append((m, p)))
        asking = await AsyncDaemonClient.open(home)
        try:
            result = await asking.call("consolidation/run", {"session": session})
            # Told before the answer: an answer on the listening connection comes after it.
            await listening.call("consolidation/receipts", {"session": session})
            return result
        finally:
            await asking.close()
            await listening.close()

    return asyncio.run(scenario()), finished()
