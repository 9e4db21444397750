"""Diagnostic and range models shared by the validator, the CLI and the language server.

Positions are 0-based lines and UTF-16 code-unit characters, the LSP default encoding, so the
language server can publish them unchanged. Lines break at `\\r\\n`, `\\r` or `\\n` as in LSP.
"""

from __future__ import annotations

import bisect
import itertools
import re
from enum import Enum

from pydantic import BaseModel, ConfigDict

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LOOKUPS_WITHOUT_TABLE = 8


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"


class Position(BaseModel):
    model_config = ConfigDict(frozen=True)
    line: int
    character: int


class Range(BaseModel):
    model_config = ConfigDict(frozen=True)
    start: Position
    end: Position


class Diagnostic(BaseModel):
    model_config = ConfigDict(frozen=True)
    code: str
    severity: Severity
    message: str
    range: Range


class TextPositions:
    """Maps code-point offsets of one text to LSP positions; built lazily, only for problems."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._starts: list[int] | None = None
        self._utf8: bytes | None = None
        self._lookups = 0  # positions found without the line table
        self._lf_only = "\r" not in text

    @property
    def text(self) -> str:
        return self._text

    @property
    def utf8(self) -> bytes:
        """The text's UTF-8 bytes, encoded once for every byte-level check."""
        if self._utf8 is None:
            self._utf8 = self._text.encode("utf-8", "surrogatepass")
        return self._utf8

    @property
    def line_starts(self) -> list[int]:
        if self._starts is None:
            if "\r" in self._text:
                self._starts = [0] + [m.end() for m in _LINE_BREAK.finditer(self._text)]
            else:  # LF only: each line's length plus its break, summed at C speed (1 MiB in ~1 ms)
                lengths = map((1).__add__, map(len, self._text.split("\n")[:-1]))
                self._starts = list(itertools.accumulate(lengths, initial=0))
        return self._starts

    def position(self, offset: int) -> Position:
        if self._starts is None and self._lookups < _LOOKUPS_WITHOUT_TABLE and self._lf_only:
            # A few problems in a long text (one over its size limit): counting the breaks
            # before each is cheaper than the table of every line.
            self._lookups += 1
            line = self._text.count("\n", 0, offset)
            begin = self._text.rfind("\n", 0, offset) + 1
        else:
            starts = self.line_starts
            line = bisect.bisect_right(starts, offset) - 1
            begin = starts[line]
        prefix = self._text[begin:offset]
        # Characters outside the BMP take two UTF-16 code units.
        character = len(prefix) if prefix.isascii() else len(prefix.encode("utf-16-le", "surrogatepass")) // 2
        return Position(line=line, character=character)

    def range(self, start: int, end: int) -> Range:
        return Range(start=self.position(start), end=self.position(end))

    def line_range(self, line: int) -> Range:
        """The whole of `line` without its line break."""
        starts = self.line_starts
        begin = starts[line]
        match = _LINE_BREAK.search(self._text, begin)
        return self.range(begin, match.start() if match else len(self._text))


class FileProblems(BaseModel):
    path: str
    diagnostics: list[Diagnostic]


def diagnostic(code: str, severity: Severity, message: str, where: Range) -> Diagnostic:
    return Diagnostic(code=f"remem/{code}", severity=severity, message=message, range=where)


def has_errors(diagnostics: list[Diagnostic]) -> bool:
    return any(d.severity is Severity.ERROR for d in diagnostics)
