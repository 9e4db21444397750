"""Content-addressed revisions: equal canonical content gives an equal revision in any process."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from .canonical import canonical_bytes

PREFIX = "sha256:"
REVISION_PATTERN = r"sha256:[0-9a-f]{64}"
_REVISION = re.compile(REVISION_PATTERN)


def global_revision(raw: bytes) -> str:
    return PREFIX + hashlib.sha256(canonical_bytes(raw)).hexdigest()


def workspace_revision(files: Mapping[str, bytes]) -> str:
    """sha256 over (file name, canonical content) pairs sorted by file name, length-prefixed."""
    digest = hashlib.sha256()
    for name in sorted(files):
        for part in (name_bytes(name), canonical_bytes(files[name])):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
    return PREFIX + digest.hexdigest()


def empty_revision(workspace_key: str | None) -> str:
    """The revision of a scope holding nothing: an empty `GLOBAL.md` (None), a workspace with no
    record (a key)."""
    return global_revision(b"") if workspace_key is None else workspace_revision({})


def name_bytes(name: str) -> bytes:
    """A file name's bytes as the file system holds them. `os.listdir` gives each byte of a name
    that is not UTF-8 as a lone surrogate (U+DC80-U+DCFF); this is its inverse, so such a file
    has a revision and a history entry like any other, and its problem is reported, not raised."""
    return name.encode("utf-8", "surrogateescape")


def is_revision(text: str) -> bool:
    return _REVISION.fullmatch(text) is not None
