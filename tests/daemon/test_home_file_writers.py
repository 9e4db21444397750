"""`settings.yml` and `credentials.yml` share the home's folder, each written under its own lock:
a write of one never removes the other's temp file in flight (decision 0409)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from remem.daemon import swap
from remem.daemon.consolidation import route
from remem.daemon.fsutil import is_temp_name
from remem.daemon.home import Home
from remem.daemon.settings import SettingsStore

ROUNDS = 40


def set_model(home: Home, model: str) -> None:
    store = SettingsStore(home)
    store.update(store.read()[1], {"consolidation.model": model})


def set_key(home: Home, key: str) -> None:
    route.store_api_key(home, "openai", key)


def landed(home: Home, model: str, key: str) -> bool:
    return (
        SettingsStore(home).read()[0].consolidation.model == model
        and route.read_credentials(home).providers["openai"].api_key == key
    )


@pytest.mark.parametrize("paused", ["settings", "credentials"])
def test_a_write_held_between_its_temp_and_its_publish_survives_the_other(
    home: Home, monkeypatch: pytest.MonkeyPatch, paused: str
) -> None:
    """One writer stops right after writing its temp, the other writes whole meanwhile, then the
    first goes on: both land, as two daemon threads (`consolidation/selectModel`,
    `consolidation/setApiKey`) may interleave them."""
    home.ensure_layout()
    module, point = (
        (swap, "settings.after-temp-write")
        if paused == "settings"
        else (route, "credentials.after-temp-write")
    )
    reached, go = threading.Event(), threading.Event()

    def hold(name: str) -> None:
        if name == point:
            reached.set()
            go.wait(10)

    monkeypatch.setattr(module, "faultpoint", hold)
    first, second = (set_model, set_key) if paused == "settings" else (set_key, set_model)
    failures: list[BaseException] = []
    thread = threading.Thread(
        target=_catching(failures, lambda: first(home, "m-1" if paused == "settings" else "sk-1"))
    )
    thread.start()
    assert reached.wait(10)
    second(home, "sk-1" if paused == "settings" else "m-1")
    go.set()
    thread.join(10)
    assert failures == []
    assert landed(home, "m-1", "sk-1")
    assert [p.name for p in home.root.iterdir() if is_temp_name(p.name)] == []


def test_concurrent_settings_and_key_writes_all_land(home: Home) -> None:
    home.ensure_layout()
    failures: list[BaseException] = []
    for n in range(ROUNDS):
        start = threading.Barrier(2)
        threads = [
            threading.Thread(target=_catching(failures, _after(start, set_model, home, f"m-{n}"))),
            threading.Thread(target=_catching(failures, _after(start, set_key, home, f"sk-{n}"))),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert failures == [], f"round {n}"
        assert landed(home, f"m-{n}", f"sk-{n}"), f"round {n}"


def _catching(failures: list[BaseException], work: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        try:
            work()
        except BaseException as exc:  # reported by the test, not lost in the thread
            failures.append(exc)

    return run


def _after(
    start: threading.Barrier, write: Callable[[Home, str], None], home: Home, value: str
) -> Callable[[], None]:
    def run() -> None:
        start.wait()
        write(home, value)

    return run
