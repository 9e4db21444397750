"""The stores this process reads the home through, built once per server on first use and kept.

The memory store says which project a workspace folder belongs to; the receipt store keeps the
receipts it has parsed between requests (provenance, and where a finished review's receipt is). Neither
is built before a feature asks, so `remem lsp` answers `initialize` without consolidation's code
and without touching the home.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from remem.daemon.home import Home

if TYPE_CHECKING:
    from remem.daemon.consolidation.receipts import ReceiptStore
    from remem.daemon.memory.store import MemoryStore


class Stores:
    def __init__(self, home: Home) -> None:
        self._home = home

    @functools.cached_property
    def memory(self) -> MemoryStore:
        from remem.daemon.memory.store import MemoryStore

        return MemoryStore(self._home)

    @functools.cached_property
    def receipts(self) -> ReceiptStore:
        from remem.daemon.consolidation.receipts import ReceiptStore

        return ReceiptStore(self._home)
