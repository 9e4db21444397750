"""What re-judging a memory folder on every keystroke may reuse: parses, texts and listings.

An editor re-validates a record's whole folder on each change, so without reuse every keystroke
re-reads and re-parses every sibling record and `MEMORY.md`. A parse depends only on the file
name and the text, so it is kept by both. A file's text and a folder's listing are kept by
their stat stamp, and trusted only once their last change is older than `stamps.RACY_NS`: a
later write within the same timestamp tick, with the same size, could otherwise go unseen.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from .canonical import read_file
from .diagnostics import Diagnostic
from .record import RECORDS_MAX
from .stamps import RACY_NS, Stamp, stamp
from .validation import ParsedRecord, parse_record

# Room for a full folder of records plus the documents an editor keeps open elsewhere.
_ENTRIES = 2 * RECORDS_MAX

_K = TypeVar("_K")
_V = TypeVar("_V")


class LintCache:
    """Bounded, least-recently-used caches of record parses, settled file texts and listings."""

    def __init__(self, entries: int = _ENTRIES) -> None:
        self._entries = entries
        self._parses: OrderedDict[tuple[str, str], ParsedRecord] = OrderedDict()
        self._texts: _ByStat[tuple[str, list[Diagnostic]]] = _ByStat(entries)
        self._listings: _ByStat[frozenset[str]] = _ByStat(entries)

    def parse(self, text: str, file_name: str) -> ParsedRecord:
        """`parse_record(text, file_name)` with its likely secrets, as a copy the caller may add to."""
        key = (file_name, text)
        parsed = self._parses.get(key)
        if parsed is None:
            parsed = parse_record(text, file_name, secrets=True)
            _remember(self._parses, key, parsed, self._entries)
        else:
            self._parses.move_to_end(key)
        # Workspace-wide rules append to the diagnostics and drop the record; the cached one stays.
        return ParsedRecord(
            parsed.record, list(parsed.diagnostics), parsed.name_span, parsed.positions, dict(parsed.fields)
        )

    def read(self, path: Path) -> tuple[str, list[Diagnostic]]:
        """The file's text decoded as UTF-8 (`canonical.decode`), re-read only when it changed."""
        text, problems = self._texts.get(path, lambda: read_file(path))
        return text, list(problems)

    def file_names(self, folder: Path) -> frozenset[str]:
        """The names of the regular files in `folder`, listed again only when its entries changed."""
        return self._listings.get(folder, lambda: _file_names(folder))


class _ByStat(Generic[_V]):
    """Values derived from a path, kept while the path's stat is unchanged and settled."""

    def __init__(self, entries: int) -> None:
        self._entries = entries
        self._known: OrderedDict[Path, tuple[Stamp, _V]] = OrderedDict()

    def get(self, path: Path, load: Callable[[], _V]) -> _V:
        st = os.stat(path)
        signature = stamp(st)
        known = self._known.get(path)
        if known is not None and known[0] == signature:
            self._known.move_to_end(path)
            return known[1]
        value = load()
        if time.time_ns() - st.st_ctime_ns > RACY_NS:
            _remember(self._known, path, (signature, value), self._entries)
        else:
            self._known.pop(path, None)
        return value


def _file_names(folder: Path) -> frozenset[str]:
    # scandir's entry types spare a stat per file.
    with os.scandir(folder) as entries:
        return frozenset(e.name for e in entries if e.is_file())


def _remember(cache: OrderedDict[_K, _V], key: _K, value: _V, entries: int) -> None:
    cache[key] = value
    if len(cache) > entries:
        cache.popitem(last=False)
