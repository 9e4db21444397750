"""A memory commit interrupted at one of its named fault points, in the process that commits,
by an action a test runs there (a folder swapped, moved, linked)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from remem.daemon import swap
from remem.daemon.memory import journal


def when_reached(point: str, action: Callable[[], None], monkeypatch: pytest.MonkeyPatch) -> None:
    """Run `action` once, when the commit reaches the fault point `point`."""
    module = swap if point.startswith("memory.global.") else journal
    reached = module.faultpoint

    def hook(name: str) -> None:
        reached(name)
        if name == point:
            monkeypatch.setattr(module, "faultpoint", reached)
            action()

    monkeypatch.setattr(module, "faultpoint", hook)
