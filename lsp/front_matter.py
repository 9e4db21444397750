"""Where a record's front-matter keys are, line by line, for the features that point into it.

The validator judges the front matter; this only locates it, so hover, completion and quick
fixes can address a key's lines. The delimiters are the validator's: the first line is `---`
(after an optional byte-order mark) and the next `---` line closes the block. A top-level key
starts its line with `key:`; the indented lines after it continue its value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from remem.daemon import safe_yaml
from remem.daemon.memory.canonical import BOM

_DELIMITER = re.compile(r"---[ \t]*")
# A plain key: YAML's indicators cannot start one (`{name: x}` is a flow mapping, no key `{name`).
_KEY = re.compile(r"([^\s#'\"?:\-{}\[\],&*!|>%@`][^:]*?)[ \t]*:(?=[ \t]|$)")


@dataclass(frozen=True)
class Entry:
    key: str
    first: int  # the line of `key:`
    last: int  # the last line of its value


@dataclass(frozen=True)
class FrontMatter:
    closing: int  # the line of the closing `---`; the opening one is line 0
    entries: tuple[Entry, ...]
    # Every line an entry's, blank or a comment: a key can be added as a line of its own (not
    # so in a flow mapping `{name: x}`, or a block indented as a whole).
    by_lines: bool = True

    def entry(self, key: str) -> Entry | None:
        return next((e for e in self.entries if e.key == key), None)

    def entry_at(self, line: int) -> Entry | None:
        return next((e for e in self.entries if e.first <= line <= e.last), None)

    def covers(self, line: int) -> bool:
        return 0 <= line <= self.closing


def locate(lines: list[str], *, open_ended: bool = False) -> FrontMatter | None:
    """The front matter of a record's lines; None when it has none or it is never closed.

    `open_ended`: a front matter not closed yet (as while it is being typed) runs to the end.
    """
    first = lines[0].removeprefix(BOM) if lines else ""
    if not _DELIMITER.fullmatch(first):
        return None
    for number in range(1, len(lines)):
        if _DELIMITER.fullmatch(lines[number]):
            return _located(lines, number)
    return _located(lines, len(lines)) if open_ended else None


def _located(lines: list[str], closing: int) -> FrontMatter:
    entries = _entries(lines, closing)
    held = {line for entry in entries for line in range(entry.first, entry.last + 1)}
    loose = (
        n
        for n in range(1, closing)
        if n not in held and lines[n].strip() and not lines[n].lstrip().startswith("#")
    )
    return FrontMatter(closing, entries, by_lines=next(loose, None) is None)


def value(lines: list[str], entry: Entry) -> object:
    """The YAML value of `entry`; None when its lines are not valid YAML on their own."""
    try:
        loaded = safe_yaml.load("\n".join(lines[entry.first : entry.last + 1]))
    except yaml.YAMLError:
        return None
    return loaded.get(entry.key) if isinstance(loaded, dict) else None


def _entries(lines: list[str], closing: int) -> tuple[Entry, ...]:
    entries: list[Entry] = []
    for number in range(1, closing):
        line = lines[number]
        match = _KEY.match(line)
        if match is not None:
            entries.append(Entry(match.group(1), number, number))
        elif entries and line[:1] in (" ", "\t") and line.strip():
            entries[-1] = Entry(entries[-1].key, entries[-1].first, number)
    return tuple(entries)
