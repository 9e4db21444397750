"""Transcript documents: their URIs, `remem-session:/<encodeURIComponent(id)>/<title>.md`, and
the session revision each text was read at.

The title segment only names the editor's tab (the extension's `transcriptUri` builds the same
URI). A branch from an open transcript is checked against the revision its text was read at
(`ShownTranscripts`), so it never cuts a conversation other than the one on screen.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from urllib.parse import quote, unquote, urlsplit

from .ids import TRANSCRIPT_SCHEME

# A turn's heading: its number, or `?` for a turn whose log names none (the daemon's turns number
# such a turn by its place).
TURN_HEADING = re.compile(r"## Turn (\d+|\?) — ")
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


class ShownTranscripts:
    """The revision of its session each transcript text this server handed out was read at,
    found by the session and the text: what an open transcript's branch lenses are checked
    against (decision 0369). A text is known by its digest, line ends aside (an editor may
    normalise them); the same text read again at a newer revision (a change it does not show)
    takes that revision. Kept: a few texts of each of the sessions asked about last."""

    def __init__(self, sessions: int = 64, texts: int = 4) -> None:
        self._sessions, self._texts = sessions, texts
        self._shown: OrderedDict[str, OrderedDict[str, str]] = OrderedDict()

    def record(self, session: str, text: str, revision: str) -> bool:
        """Remember that `text` shows `session` at `revision`; whether that is news (a text not
        known, or known at another revision), which the lenses of an open transcript may need."""
        texts = self._shown.pop(session, None) or OrderedDict()
        self._shown[session] = texts
        while len(self._shown) > self._sessions:
            self._shown.popitem(last=False)
        key = _digest(text)
        known = texts.pop(key, None)
        texts[key] = revision
        while len(texts) > self._texts:
            texts.popitem(last=False)
        return known != revision

    def revision(self, session: str, text: str) -> str | None:
        """The revision `text` was read at; None for a text this server did not hand out."""
        texts = self._shown.get(session)
        return None if texts is None else texts.get(_digest(text))


def _digest(text: str) -> str:
    flat = _LINE_ENDS.sub("\n", text)
    return hashlib.sha256(flat.encode("utf-8", "surrogatepass")).hexdigest()


_LINE_ENDS = re.compile(r"\r\n?")
