"""Workspace identity: `<slug>-<sha256(abs_cwd)[:16]>` from the lexical absolute cwd.

No realpath: a symlinked path is a distinct workspace and a moved project is a new one, so
identity never depends on what the file system looks like at the moment of the call.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass

_UNSAFE = re.compile(r"[^a-z0-9._-]+")
_KEY = re.compile(r"[a-z0-9_][a-z0-9._-]{0,31}-[0-9a-f]{16}")
SLUG_MAX = 32


@dataclass(frozen=True)
class WorkspaceId:
    key: str
    cwd: str

    @classmethod
    def from_cwd(cls, cwd: str | os.PathLike[str]) -> WorkspaceId:
        absolute = os.path.abspath(os.fspath(cwd))
        return cls(key=workspace_key(absolute), cwd=absolute)


def workspace_key(cwd: str) -> str:
    absolute = os.path.abspath(cwd)
    digest = hashlib.sha256(os.fsencode(absolute)).hexdigest()[:16]
    # Dots are trimmed too, so a key never looks like a hidden file or `..`.
    slug = _UNSAFE.sub("-", os.path.basename(absolute).lower()).strip("-.")
    slug = slug[:SLUG_MAX].rstrip("-.") or "root"
    return f"{slug}-{digest}"


def is_workspace_key(text: str) -> bool:
    """Whether `text` is shaped like a key (so it is safe as a single path segment)."""
    return _KEY.fullmatch(text) is not None
