"""A store has one memory history (its caches and its writers' turns are its own), however many
threads meet its first use together. It was a `cached_property`, which has no lock from Python
3.12: two threads there each built one, each writing entries in turns of its own. Each History
built here waits (bounded) for a second one to be built alongside, which only a lockless first
use lets happen; on Python 3.11 `cached_property`'s own lock hid the race."""

from __future__ import annotations

import contextlib
import threading

import pytest

from remem.daemon.home import Home
from remem.daemon.memory import store as store_module
from remem.daemon.memory.history import History
from remem.daemon.memory.store import MemoryStore

_ALONGSIDE_SECONDS = 2.0  # how long a History waits for another being built: none, once locked


def test_two_threads_meeting_the_first_use_get_one_history(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[History] = []
    alongside = threading.Barrier(2, timeout=_ALONGSIDE_SECONDS)

    class Watched(History):
        def __init__(self, *args: object, **kwargs: object) -> None:
            built.append(self)
            with contextlib.suppress(threading.BrokenBarrierError):  # built alone, as it must be
                alongside.wait()
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store_module, "History", Watched)
    store = MemoryStore(home)
    start = threading.Barrier(2)
    seen: list[History] = []

    def first_use() -> None:
        start.wait()
        seen.append(store.history)

    threads = [threading.Thread(target=first_use) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1 and seen == [built[0], built[0]], (built, seen)
    assert not home.root.exists()  # built over the home's paths: nothing made (decision 0499)
