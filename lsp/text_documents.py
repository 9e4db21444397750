"""Open documents as the editor holds them: lines broken only where LSP breaks them, and a text
every feature can encode.

pygls applies an incremental change at the lines of `str.splitlines`, which also breaks at
U+2028, U+2029, U+0085, form feeds and other separators; LSP, and remem's own positions, break
only at `\\r\\n`, `\\r` and `\\n`. A change after such a character landed elsewhere: the server's
text drifted from the editor's, its diagnostics went stale, and a quick fix that replaces the
document wrote the drifted text over the user's edit.

A character past the end of a line means the line's end (LSP); pygls took it for the line's
last character when the line has no line break (the document's last), and an edit there landed
one character early. A range whose end comes before its start is taken in order, as VS Code
takes it (pygls repeated the text between them; decision 0449). A document a change to which
was dropped is `lost` until the editor sends its whole text again.

An editor can send a lone surrogate (JSON `"\\ud800"`), which no file can hold: the validators,
the parsers and the daemon link encode the text and failed on it (hover, lenses, code actions,
the Memory view). `source`, what every feature reads, holds U+FFFD in its place, as remem reads
such an escape everywhere (decision 0391); one UTF-16 unit, as the surrogate was, so every
position stays true of the editor's text. The edits are applied to the text as sent
(`editor_source`), where diagnostics find the surrogate to point at. A UTF-16 editor can edit
between the two halves of an emoji: the text as sent then holds them as two lone surrogates, as
the editor does (pygls put the edit after the emoji, and the copies drifted apart).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import attrs
from lsprotocol import types
from pygls.workspace import PositionCodec, ServerTextPosition, TextDocument, Workspace

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str, only a lone one: JSON pairs are joined


def _first_lone_surrogate(text: str) -> int | None:
    """The offset of the first lone surrogate in `text`; None when UTF-8 can encode it all."""
    # A keystroke in a 1 MiB record runs this: an ASCII text (known in O(1)) holds no surrogate,
    # and the codec finds one three times faster than a regular expression.
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


class LspTextDocument(TextDocument):
    # The last text as sent, the offset of its first lone surrogate, and the text mended: made
    # once per text, which a keystroke in a long record asks for from several features.
    _read: tuple[str, int | None, str] = ("", None, "")
    # A change to it was dropped (of no valid shape): this copy is known to differ from the
    # editor's until the editor sends the whole text again, or reopens it (decision 0449).
    lost: bool = False

    def _apply_full_change(self, change: types.TextDocumentContentChangeEvent) -> None:
        super()._apply_full_change(change)
        self.lost = False  # the editor's text again, whatever came before

    @property
    def editor_source(self) -> str:
        """The text exactly as the editor sent it, lone surrogates included."""
        return super().source

    @property
    def source(self) -> str:
        """The editor's text with each lone surrogate as U+FFFD."""
        return self._mended()[2]

    @property
    def lone_surrogate(self) -> int | None:
        """The offset of the first lone surrogate of the editor's text; None when it has none."""
        return self._mended()[1]

    def _mended(self) -> tuple[str, int | None, str]:
        sent = self.editor_source
        if self._read[0] is not sent:
            first = _first_lone_surrogate(sent)
            self._read = (sent, first, sent if first is None else _SURROGATE.sub("\ufffd", sent))
        return self._read

    @property
    def lines(self) -> Sequence[str]:
        # pygls rebuilds the text from these when it applies a change: the text as sent.
        return tuple(_LINE.findall(self.editor_source))

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        change = _well_formed(change)
        # A UTF-16 editor can put an end of the range between the two halves of a character
        # beyond the BMP: that splits it, and the editor then holds two lone surrogates.
        rejoin = self.lone_surrogate is not None or _SURROGATE.search(change.text) is not None
        if not self.editor_source.isascii():
            lines = self.lines
            ends = {(p.line, p.character) for p in (change.range.start, change.range.end)}
            for line, character in sorted(ends, reverse=True):  # a split moves what follows it
                rejoin = self._split(lines, line, character) or rejoin
        super()._apply_incremental_change(change)
        if rejoin:
            # The editor's text as JSON brings it: two halves side by side (an edit can bring
            # them together again) are one character, a half alone stays a lone surrogate.
            self._source = self.editor_source.encode("utf-16-le", "surrogatepass").decode(
                "utf-16-le", "surrogatepass"
            )

    def _split(self, lines: Sequence[str], line: int, character: int) -> bool:
        """Split the character whose UTF-16 halves `character` falls between on `line`, if it
        does, into its two surrogates: one unit each, as the editor counts them."""
        if line >= len(lines) or lines[line].isascii():
            return False
        units = 0
        for index, char in enumerate(lines[line]):
            if units >= character:
                return False
            wide = ord(char) > 0xFFFF
            if wide and units + 1 == character:
                at = sum(len(before) for before in lines[:line]) + index
                code = ord(char) - 0x10000
                halves = chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))
                self._source = self.editor_source[:at] + halves + self.editor_source[at + 1 :]
                return True
            units += 2 if wide else 1
        return False


def _well_formed(change: types.TextDocumentContentChangePartial) -> types.TextDocumentContentChangePartial:
    """`change` with its range's ends in order: an end before the start is taken as the start,
    as VS Code's `Range` and the LSP's reference `TextDocument` take it (decision 0449). pygls
    kept the text before the start and the text from the end: what lay between came twice."""
    start, end = change.range.start, change.range.end
    if (end.line, end.character) >= (start.line, start.character):
        return change
    return attrs.evolve(change, range=types.Range(start=end, end=start))


class LspPositionCodec(PositionCodec):
    """pygls's codec, a character past a line's end meaning the line's end."""

    def position_from_client_units(
        self, lines: Sequence[str], position: types.Position
    ) -> ServerTextPosition:
        if position.line < len(lines):
            end = self.client_num_units(lines[position.line].rstrip("\r\n"))
            position = types.Position(position.line, min(position.character, end))  # pygls changes its own
        return super().position_from_client_units(lines, position)


class LspWorkspace(Workspace):
    """pygls's workspace, its text documents `LspTextDocument`s, its positions `LspPositionCodec`'s."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._position_codec = LspPositionCodec(self.position_encoding)

    @classmethod
    def like(cls, workspace: Workspace) -> LspWorkspace:
        """A workspace of the same root, folders and encoding (made at `initialize`, when no
        document is open yet)."""
        return cls(
            workspace.root_uri,
            workspace._sync_kind,  # noqa: SLF001 - pygls keeps the server's sync kind only there
            list(workspace.folders.values()),
            workspace.position_encoding,
        )

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return LspTextDocument(
            doc_uri, source=source, version=version, language_id=language_id,
            sync_kind=self._sync_kind, position_codec=self.position_codec,
        )  # fmt: skip
