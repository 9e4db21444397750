"""What re-judging a memory folder on every keystroke may reuse: parses, texts and listings.

An editor re-validates a record's whole folder on each change, so without reuse every keystroke
re-reads and re-parses every sibling record and `MEMORY.md`. A parse depends only on the file
name and the text, so it is kept by both, the text by identity: the editor's document and a
settled file each hand over the same string until it changes, and hashing a new 1 MiB text
(as keying by its value would, on every keystroke) costs about half a millisecond. A file's
text and a folder's listing are kept by their stat stamp, and trusted only once their last
change is older than `stamps.RACY_NS`: a later write within the same timestamp tick, with the
same size, could otherwise go unseen. The stamp is the path's own (`lstat`), never what a link
there leads to, and a text is kept by the stamp of the descriptor it was read from: a file is
opened as the store opens it (`canonical.open_memory_file`), so one swapped for a link or a FIFO
after the folder was listed is refused, never followed nor waited on.

Each cache is bounded in entries and in the characters of text it holds: every keystroke in a
long document is a new text, and a count of entries alone let a language server grow by a
megabyte a keystroke in a 1 MiB record, to over a gigabyte. The parses of typed texts (an
editor's documents, a new text on each change) are kept apart from those of the files read: a
burst of changes (typing fast, a formatter, an agent writing) otherwise pushed the folder's
records out, and the folder's next reading parsed all of them again (about 60 ms for 200).
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

from .canonical import IRREGULAR_RECORD, read_file_stat
from .diagnostics import Diagnostic
from .record import BODY_MAX_BYTES, FRONT_MATTER_MAX_BYTES, RECORDS_MAX
from .stamps import RACY_NS, Stamp, stamp
from .validation import ParsedRecord, parse_record

# Room for a full folder of records plus the documents an editor keeps open elsewhere, and for
# the text of that many records at their largest.
_ENTRIES = 2 * RECORDS_MAX
_CHARS = _ENTRIES * (FRONT_MATTER_MAX_BYTES + BODY_MAX_BYTES)
# Typed texts: the open documents' latest versions, a folder's worth of them; older versions,
# never asked for again, are what goes first.
_TYPED_ENTRIES = RECORDS_MAX
_TYPED_CHARS = _TYPED_ENTRIES * (FRONT_MATTER_MAX_BYTES + BODY_MAX_BYTES)

_K = TypeVar("_K")
_V = TypeVar("_V")


class LintCache:
    """Bounded, least-recently-used caches of record parses, settled file texts and listings."""

    def __init__(
        self,
        entries: int = _ENTRIES,
        chars: int = _CHARS,
        typed_entries: int = _TYPED_ENTRIES,
        typed_chars: int = _TYPED_CHARS,
    ) -> None:
        # Keyed by the text's id: the entry holds the text, so no other live string has that id.
        self._parses: _Lru[tuple[str, int], tuple[str, ParsedRecord]] = _Lru(entries, chars)
        self._typed: _Lru[tuple[str, int], tuple[str, ParsedRecord]] = _Lru(typed_entries, typed_chars)
        self._texts: _ByStat[tuple[str, list[Diagnostic]]] = _ByStat(_Lru(entries, chars))
        self._listings: _ByStat[FolderEntries] = _ByStat(_Lru(entries, chars))

    def parse(self, text: str, file_name: str, typed: bool = False) -> ParsedRecord:
        """`parse_record(text, file_name)` with its likely secrets, as a copy the caller may add to;
        `typed`: the text is an editor's document, kept apart from the files' texts."""
        parses = self._typed if typed else self._parses
        key = (file_name, id(text))
        kept = parses.get(key)
        if kept is None:
            kept = (text, parse_record(text, file_name, secrets=True))
            parses.put(key, kept, len(text))
        parsed = kept[1]
        # Workspace-wide rules append to the diagnostics and drop the record; the cached one stays.
        return ParsedRecord(
            parsed.record, list(parsed.diagnostics), parsed.name_span, parsed.positions, dict(parsed.fields)
        )

    def read(self, folder: Path, name: str) -> tuple[str, list[Diagnostic]]:
        """The text of the file `name` in `folder`, decoded as UTF-8 (`canonical.decode`), re-read
        only when it changed; `Unread` when it is no regular file (a link, a FIFO) by the time it
        is read, `FileNotFoundError` when it is gone."""
        # Paths as strings, put together by hand: on every keystroke, for each record of a folder
        # of 200, joining `Path`s cost more than the stat, and `os.path.join` a quarter of it.
        path = f"{os.fspath(folder)}{os.sep}{name}"

        def load(_: os.stat_result) -> tuple[tuple[str, list[Diagnostic]], os.stat_result]:
            return read_file_stat(Path(path), IRREGULAR_RECORD)

        text, problems = self._texts.get(path, load, lambda read: len(read[0]))
        return text, list(problems)

    def entries(self, folder: Path) -> FolderEntries:
        """The names of the entries in `folder`, listed again only when they changed;
        `NotADirectoryError` when `folder` is a link or no folder: none is listed through it."""
        return self._listings.get(os.fspath(folder), lambda st: _entries(folder, st), FolderEntries.chars)


class _Lru(Generic[_K, _V]):
    """At most `entries` values holding at most `chars` characters of text in all, the least
    recently used dropped first; a value larger than `chars` on its own is not kept."""

    def __init__(self, entries: int, chars: int) -> None:
        self._entries, self._chars, self._held = entries, chars, 0
        self._values: OrderedDict[_K, tuple[int, _V]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def get(self, key: _K) -> _V | None:
        found = self._values.get(key)
        if found is None:
            return None
        self._values.move_to_end(key)
        return found[1]

    def put(self, key: _K, value: _V, chars: int) -> None:
        self.pop(key)
        if chars > self._chars:
            return
        self._values[key] = (chars, value)
        self._held += chars
        while len(self._values) > self._entries or self._held > self._chars:
            self._held -= self._values.popitem(last=False)[1][0]

    def pop(self, key: _K) -> None:
        found = self._values.pop(key, None)
        if found is not None:
            self._held -= found[0]


class _ByStat(Generic[_V]):
    """Values derived from a path, kept while the path's own stat is unchanged and settled."""

    def __init__(self, known: _Lru[str, tuple[_Signature, _V]]) -> None:
        self._known = known

    def get(
        self,
        path: str,
        load: Callable[[os.stat_result], tuple[_V, os.stat_result]],
        chars: Callable[[_V], int],
    ) -> _V:
        """The value of `path`, loaded again when it changed; `chars` tells the text it holds.

        `load` is given the path's `lstat` and returns the value with the stat of what it was
        derived from (a file's: of the descriptor it read), which the value is kept by."""
        st = os.lstat(path)  # a link's own: never what it leads to
        known = self._known.get(path)
        if known is not None and known[0] == _signature(st):
            return known[1]
        value, st = load(st)
        if time.time_ns() - st.st_ctime_ns > RACY_NS:
            self._known.put(path, (_signature(st), value), chars(value))
        else:
            self._known.pop(path)
        return value


_Signature = tuple[int, Stamp]  # the file's type, and its stamp


def _signature(st: os.stat_result) -> _Signature:
    """What a kept value is proven by: a link or a FIFO at the path never matches a file's."""
    return stat.S_IFMT(st.st_mode), stamp(st)


class FolderEntries(NamedTuple):
    regular: frozenset[str]  # the regular files
    other: frozenset[str]  # links (never followed), folders, FIFOs

    def chars(self) -> int:
        return sum(map(len, self.regular)) + sum(map(len, self.other))


def _entries(folder: Path, st: os.stat_result) -> tuple[FolderEntries, os.stat_result]:
    """The entries of the folder `st` (its lstat) found, with the stat of what was listed. Listed
    through a descriptor that follows no link: a link put at `folder` (before the lstat or after
    it) lists nothing of the folder it leads to, wherever a caller asks."""
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", os.fspath(folder))
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link came meanwhile
            raise NotADirectoryError(errno.ENOTDIR, "a link, not a folder", os.fspath(folder)) from None
        raise
    try:
        listed = os.fstat(fd)
        # scandir's entry types spare a stat per file.
        with os.scandir(fd) as entries:
            plain = {e.name: e.is_file(follow_symlinks=False) for e in entries}
    finally:
        os.close(fd)
    regular = frozenset(n for n in plain if plain[n])
    return FolderEntries(regular, frozenset(n for n in plain if not plain[n])), listed
