"""A bounded take of a scope's lock (an agent's update, `memory log` through the daemon) is
refused SCOPE_BUSY once another process has kept the lock that long, even while this process's
own reads of the scope come and go. Each of them restarted the wait, so a lock another process
held shared (a `--no-daemon` read suspended with Ctrl-Z) kept the take waiting for good."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import portalocker

from remem.daemon.memory.store import MemoryStore, ScopeLockBusy, lock_waits_at_most

from .test_crash_recovery import EMPTY

BOUND_SECONDS = 0.5
READ_EVERY_SECONDS = 0.2  # the daemon's own reads of the scope, now and then (load, not timing)
JOIN_SECONDS = 30  # far past the bound: only a take that never ends reaches it


@contextmanager
def held_shared_by_another(store: MemoryStore) -> Iterator[None]:
    """Global's lock held shared as another process holds it (flock is per open file)."""
    with open(store.home.locks / "global.lock", "a+b") as handle:
        portalocker.lock(handle, portalocker.LockFlags.SHARED)
        try:
            yield
        finally:
            portalocker.unlock(handle)


def test_a_bounded_write_ends_busy_while_this_processs_own_reads_come_and_go(store: MemoryStore) -> None:
    store.home.ensure_layout()
    stop, outcome = threading.Event(), []

    def reads() -> None:
        while not stop.is_set():
            store.read_global()
            stop.wait(READ_EVERY_SECONDS)

    def write() -> None:
        try:
            with lock_waits_at_most(BOUND_SECONDS):
                store.replace_global(EMPTY, "Answer briefly.\n")
        except ScopeLockBusy:
            outcome.append("busy")

    with held_shared_by_another(store):
        reader, writer = threading.Thread(target=reads), threading.Thread(target=write, daemon=True)
        reader.start()
        writer.start()
        writer.join(JOIN_SECONDS)
        stop.set()
        reader.join()

    assert outcome == ["busy"], "the write still waited for a lock another process kept"
    assert store.read_global().revision == EMPTY
