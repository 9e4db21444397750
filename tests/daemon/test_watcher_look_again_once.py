"""A hand edit the daemon's watcher reports while another process keeps the scope's lock (a
`--no-daemon` writer suspended with Ctrl-Z) is left for a later look, said once for the whole
hold, and looked at as soon as a look again finds the lock let go (said too). It was warned of
at every look again, for as long as the lock was held, each look again holding the scope's
worker thread the 5 s of the lock's bound: a look again now tries the lock once.

The daemon's test marks each of its looks through a hook in its process (`sitecustomize`), so
the test waits for looks again, not for a guess at how long they take."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from remem.daemon import locks
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.memory import store as store_module
from remem.daemon.protocol.rpc import ReplaceGlobalParams
from remem.daemon.server.memory_methods import MemoryMethods
from remem.daemon.server.runtime import DaemonPaths
from tests.scratch import hooked_pythonpath
from tests.waiting import until

from .helpers import remem

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
HAND_EDIT = "Answer in French.\n"
LEFT = "memory: the change of Global memory is looked at again later: another remem process holds"
LOOKED = "memory: the change of Global memory is looked at: its lock was let go"
LOOKS_ENV = "REMEM_TEST_LOOKS"
LOOKS_AGAIN = 3  # looks again while the lock is held, past the first

HOOK = f"""
import os
from remem.daemon.server import memory_methods

_looks = os.environ["{LOOKS_ENV}"]
_scope_changed = memory_methods.MemoryMethods.scope_changed


async def _marked(self, scope):
    looked = await _scope_changed(self, scope)
    if scope is None:
        with open(_looks, "a") as marks:
            marks.write("looked\\n" if looked else "left\\n")
    return looked


memory_methods.MemoryMethods.scope_changed = _marked
"""


@pytest.mark.slow
def test_a_look_left_while_the_lock_is_held_is_said_once_and_made_once_it_is_let_go(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looks = tmp_path / "looks"
    monkeypatch.delenv(NO_DAEMON_ENV)
    monkeypatch.setenv("PYTHONPATH", hooked_pythonpath(HOOK, "remem-look-again-hook-"))
    monkeypatch.setenv(LOOKS_ENV, str(looks))
    text = tmp_path / "global.md"
    text.write_text("Answer briefly.\n")
    made = remem(home, "memory", "replace-global", "--expected-revision", EMPTY, "--file", str(text))
    assert made.returncode == 0, made.stderr
    heard: list[tuple[str, dict[str, Any]]] = []

    def marks() -> list[str]:
        return looks.read_text().split() if looks.exists() else []

    async def announced() -> str:
        client = await AsyncDaemonClient.open(
            home, listener=lambda method, news: heard.append((method, news))
        )
        try:
            held = locks.try_file_lock(home.locks / "global.lock")
            assert held is not None
            try:
                home.global_file.write_text(HAND_EDIT)
                await until(
                    lambda: marks().count("left") > LOOKS_AGAIN, what="looks again while held", seen=marks
                )
            finally:
                held.release()
            await until(lambda: "looked" in marks(), what="the look once the lock is let go", seen=marks)
            now = await client.call("memory/readGlobal")
            await until(
                lambda: ("memory/changed", {"scope": "global", "workspace": None, "cwd": None,
                                            "revision": now["revision"], "valid": True}) in heard,
                what="the hand edit announced",
                seen=lambda: heard,
            )  # fmt: skip
            return str(now["content"])
        finally:
            await client.close()

    assert asyncio.run(announced()) == HAND_EDIT
    said = DaemonPaths(home).log.read_text().splitlines()
    assert [line for line in said if LEFT in line] == [next(line for line in said if LEFT in line)], (
        "the hold was said more than once"
    )
    assert any(LOOKED in line for line in said), said
    assert remem(home, "daemon", "stop").returncode == 0


def test_a_look_again_tries_the_held_lock_once(
    home: Home, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The first look waits the lock's bound (a commit holds it well under a second); a look
    again, the hold already known, waits for nothing: it held a worker thread 5 s each time."""
    published: list[Any] = []
    methods = MemoryMethods(home, lambda method, news: published.append(news), watch=True)
    tries: list[Path] = []
    take = store_module.bounded_file_lock

    def counted(path: Path, **kwargs: Any) -> locks.LockHandle | None:
        tries.append(path)
        return take(path, **kwargs)

    async def looks() -> list[bool]:
        await methods.replace_global(ReplaceGlobalParams(expectedRevision=EMPTY, content="Answer briefly.\n"))
        held = locks.try_file_lock(home.locks / "global.lock")  # another open file: as another process
        assert held is not None
        try:
            home.global_file.write_text(HAND_EDIT)
            looked = [await methods.scope_changed(None)]
            with monkeypatch.context() as patched:
                patched.setattr(store_module, "bounded_file_lock", counted)
                looked += [await methods.scope_changed(None) for _ in range(LOOKS_AGAIN)]
        finally:
            held.release()
        return [*looked, await methods.scope_changed(None)]

    with caplog.at_level(logging.INFO, logger="remem.daemon"):
        assert asyncio.run(looks()) == [False] * (1 + LOOKS_AGAIN) + [True]
    assert len(tries) == LOOKS_AGAIN, f"{len(tries)} tries of the lock for {LOOKS_AGAIN} looks again"
    said = [record.getMessage() for record in caplog.records]
    assert sum(LEFT in line for line in said) == 1, said
    assert sum(LOOKED in line for line in said) == 1, said
    assert published[-1].revision == methods.store.read_global().revision
    assert methods.store.read_global().content == HAND_EDIT
