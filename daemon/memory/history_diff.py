"""The rendering of a memory history entry's change: its stat (files added, changed and removed,
lines in and out) and its patch, one file after another, with git's quoting of odd file names.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

from ..os_names import shown
from ..protocol.memory import FileStat
from .record import GLOBAL_FILE, record_name_of


def stat(before: Mapping[str, bytes], after: Mapping[str, bytes]) -> FileStat:
    """Which files a generation added, changed and removed, and its lines in and out."""
    result = FileStat()
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        label = file_label(name)
        (result.added if old is None else result.removed if new is None else result.changed).append(label)
        # Counted from the matcher `unified_diff` uses, not from its text: a record's own
        # `---` front matter reads like a diff's file header there.
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, _lines(old), _lines(new)).get_opcodes():
            if tag != "equal":
                result.deletions += i2 - i1
                result.insertions += j2 - j1
    return result


def unified_diff(before: Mapping[str, bytes], after: Mapping[str, bytes], old: str, new: str) -> str:
    """A patch from `before` to `after`, one file after another."""
    parts: list[str] = []
    for name in sorted(set(before) | set(after)):
        if before.get(name) != after.get(name):
            parts.extend(
                difflib.unified_diff(
                    _lines(before.get(name)),
                    _lines(after.get(name)),
                    _patch_path(f"{old}/{shown(name)}"),
                    _patch_path(f"{new}/{shown(name)}"),
                )
            )
    return "".join(p if p.endswith("\n") else p + "\n\\ No newline at end of file\n" for p in parts)


_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_QUOTED = re.compile(r'[\x00-\x1f\x7f"\\]')


def _patch_path(path: str) -> str:
    """`path` for a patch's file header, quoted as git quotes one when it holds a control
    character: a newline in a hand-made file's name would otherwise split the header into
    lines that read as the patch's own. (A name's bytes that are not UTF-8 stay `\\xff`.)"""
    if _CONTROL.search(path) is None:
        return path
    return '"' + _QUOTED.sub(lambda found: _quoted_char(found.group()), path) + '"'


def _quoted_char(char: str) -> str:
    if char in '"\\':
        return "\\" + char
    return _C_ESCAPES.get(char, f"\\{ord(char):03o}")


def file_label(name: str) -> str:
    """How a stat names file `name`: a record by its name; GLOBAL.md (a workspace's hand-made
    one too) and anything else by its file name."""
    record = None if name == GLOBAL_FILE else record_name_of(name)
    return shown(record if record is not None else name)


def _lines(data: bytes | None) -> list[str]:
    return [] if data is None else data.decode("utf-8", "replace").splitlines(keepends=True)
