"""Content-addressed revisions: equal canonical content gives an equal revision in any process."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from .canonical import canonical_bytes

PREFIX = "sha256:"
_REVISION = re.compile(r"sha256:[0-9a-f]{64}")


def global_revision(raw: bytes) -> str:
    return PREFIX + hashlib.sha256(canonical_bytes(raw)).hexdigest()


def workspace_revision(files: Mapping[str, bytes]) -> str:
    """sha256 over (file name, canonical content) pairs sorted by file name, length-prefixed."""
    digest = hashlib.sha256()
    for name in sorted(files):
        for part in (name.encode("utf-8"), canonical_bytes(files[name])):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
    return PREFIX + digest.hexdigest()


def is_revision(text: str) -> bool:
    return _REVISION.fullmatch(text) is not None
