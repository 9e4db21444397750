"""The record and its file: fields, limits, and rendering a record to canonical Markdown."""

from __future__ import annotations

import functools
import json
from enum import Enum

import yaml

from .. import safe_yaml
from ..protocol.memory import RECORD_SUFFIX, Record
from .canonical import canonicalize

NAME_MAX = 64
DESCRIPTION_MAX = 200
FRONT_MATTER_MAX_BYTES = 16 * 1024  # YAML work is bounded before parsing (decision 0141)
BODY_MAX_BYTES = 8 * 1024
GLOBAL_MAX_BYTES = 24 * 1024
RECORDS_MAX = 200
INDEX_MAX_LINES = 200
INDEX_MAX_BYTES = 24 * 1024
RESERVED_NAMES = frozenset({"memory"})
INDEX_FILE = "MEMORY.md"
GLOBAL_FILE = "GLOBAL.md"
FIELDS = ("name", "description", "type")


class RecordType(str, Enum):
    FEEDBACK = "feedback"
    PROJECT = "project"
    REFERENCE = "reference"


TYPE_MEANINGS = {
    RecordType.FEEDBACK: "how the user wants work done",
    RecordType.PROJECT: "facts about this codebase",
    RecordType.REFERENCE: "pointers to docs, commands, places",
}


def render_record(record: Record) -> str:
    """The canonical file text of `record` (validation happens on this text, not before)."""
    header = "".join(f"{key}: {_yaml_scalar(getattr(record, key))}\n" for key in FIELDS)
    return f"---\n{header}---\n{canonicalize(record.content)}"


def _yaml_scalar(value: str) -> str:
    # Names, types and descriptions come back in commit after commit, and the YAML parse that
    # proves a plain scalar costs more than the rest of the rendering; a value past any field's
    # limit (validation refuses it) is not kept.
    return _plain_or_quoted(value) if len(value) > DESCRIPTION_MAX else _cached_scalar(value)


def _plain_or_quoted(value: str) -> str:
    """A plain scalar when YAML reads it back as the same string, else a quoted one.

    A JSON string is a valid YAML double-quoted scalar, so quoting never needs its own escaper.
    """
    if value and "\n" not in value and value == value.strip():
        try:
            if safe_yaml.load(f"k: {value}") == {"k": value}:
                return value
        except yaml.YAMLError:
            pass
    return json.dumps(value, ensure_ascii=False).translate(_ESCAPED)


# What JSON leaves raw but the file's text may not hold (C1 controls, DEL: `canonical`) or YAML
# reads as a line break, escaped as YAML reads them back: validation then judges the value
# itself and says where in it the character is.
_ESCAPED = {c: f"\\u{c:04x}" for c in [0x7F, *range(0x80, 0xA0), 0x2028, 0x2029]}


_cached_scalar = functools.lru_cache(maxsize=1024)(_plain_or_quoted)


def record_name_of(file_name: str) -> str | None:
    """The record name a workspace file name stands for, or None for non-record files."""
    if file_name.startswith(".") or not file_name.endswith(RECORD_SUFFIX) or file_name == INDEX_FILE:
        return None
    return file_name[: -len(RECORD_SUFFIX)]
