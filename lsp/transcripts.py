"""Transcript documents' URIs: `remem-session:/<encodeURIComponent(id)>/<title>.md`.

The title segment only names the editor's tab (the extension's `transcriptUri` builds the same
URI).
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote, urlsplit

from .ids import TRANSCRIPT_SCHEME

TURN_HEADING = re.compile(r"## Turn (\d+) — ")
_URI_SAFE = "-_.!~*'()"  # what encodeURIComponent leaves as it is
_TAB_CHARS = 60
_UNNAMEABLE = re.compile(r"[\x00-\x1f/\\]+")


def transcript_uri(session: str, title: str | None = None) -> str:
    """The transcript's URI; with `title`, flattened and cut to a tab's width, in its path."""
    name = " ".join(_UNNAMEABLE.sub(" ", title or "").split())
    if len(name) > _TAB_CHARS:
        name = f"{name[: _TAB_CHARS - 1]}…"
    tail = f"/{quote(name, safe=_URI_SAFE)}" if name else ""
    return f"{TRANSCRIPT_SCHEME}:/{quote(session, safe=_URI_SAFE)}{tail}.md"


def session_of(uri: str) -> str | None:
    """The session id of a transcript URI (`/<id>/<title>.md` or `/<id>.md`); None for any other URI."""
    parts = urlsplit(uri)
    if parts.scheme != TRANSCRIPT_SCHEME or not parts.path.endswith(".md"):
        return None
    return unquote(parts.path.removeprefix("/").removesuffix(".md").split("/")[0]) or None
