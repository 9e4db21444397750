"""Document symbols for `GLOBAL.md`: its Markdown headings as a tree, for the outline.

A heading's symbol spans its section: up to the next heading of the same or a higher level.
ATX headings (`#` to `######`) count; lines inside fenced code blocks never do. A client
without hierarchical symbols gets the same headings flat, each naming its parent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lsprotocol import types
from pygls.capabilities import get_capability

from ..documents import Kind, lines_of, memory_file, opened
from ..server import RememServer

_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Heading:
    level: int
    title: str
    line: int
    last: int  # the last line of its section


def register(server: RememServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbol(
        ls: RememServer, params: types.DocumentSymbolParams
    ) -> list[types.DocumentSymbol] | list[types.SymbolInformation] | None:
        file = memory_file(ls, params.text_document.uri)
        document = opened(ls, params.text_document.uri)
        if file is None or file.kind is not Kind.GLOBAL or document is None:
            return None
        lines = lines_of(document.source)
        found = headings(lines)
        hierarchical = "text_document.document_symbol.hierarchical_document_symbol_support"
        if get_capability(ls.client_capabilities, hierarchical, False):
            return _tree(found, lines)
        return _flat(found, lines, params.text_document.uri)


def headings(lines: list[str]) -> list[Heading]:
    """The headings of Markdown `lines`, each with the last line of its section."""
    found: list[tuple[int, str, int]] = []
    fence: str | None = None
    for number, line in enumerate(lines):
        marks = _FENCE.match(line)
        if fence is not None:
            if marks is not None and _closes(marks, fence):
                fence = None
            continue
        if marks is not None:
            fence = marks.group(1)
            continue
        heading = _HEADING.fullmatch(line)
        if heading is not None and (heading.group(2) or "").strip():
            found.append((len(heading.group(1)), heading.group(2).strip(), number))
    return [
        Heading(level, title, line, _section_end(found, index, len(lines)))
        for index, (level, title, line) in enumerate(found)
    ]


def _closes(marks: re.Match[str], fence: str) -> bool:
    """Whether a fence line closes the block `fence` opened: the same mark, as long, nothing after."""
    found = marks.group(1)
    return found[0] == fence[0] and len(found) >= len(fence) and not marks.string[marks.end() :].strip()


def _section_end(found: list[tuple[int, str, int]], index: int, line_count: int) -> int:
    level = found[index][0]
    following = (line for other, _, line in found[index + 1 :] if other <= level)
    return next(following, line_count) - 1


def _tree(found: list[Heading], lines: list[str]) -> list[types.DocumentSymbol]:
    roots: list[types.DocumentSymbol] = []
    open_sections: list[tuple[int, list[types.DocumentSymbol]]] = []
    for heading in found:
        children: list[types.DocumentSymbol] = []
        symbol = types.DocumentSymbol(
            name=heading.title,
            kind=types.SymbolKind.String,
            range=_span(heading.line, heading.last, lines),
            selection_range=_span(heading.line, heading.line, lines),
            children=children,
        )
        while open_sections and open_sections[-1][0] >= heading.level:
            open_sections.pop()
        (open_sections[-1][1] if open_sections else roots).append(symbol)
        open_sections.append((heading.level, children))
    return roots


def _flat(found: list[Heading], lines: list[str], uri: str) -> list[types.SymbolInformation]:
    symbols = []
    parents: list[Heading] = []
    for heading in found:
        while parents and parents[-1].level >= heading.level:
            parents.pop()
        symbols.append(
            types.SymbolInformation(
                name=heading.title,
                kind=types.SymbolKind.String,
                location=types.Location(uri, _span(heading.line, heading.last, lines)),
                container_name=parents[-1].title if parents else None,
            )
        )
        parents.append(heading)
    return symbols


def _span(first: int, last: int, lines: list[str]) -> types.Range:
    """Lines `first`..`last`, to the end of the last one (in UTF-16 code units)."""
    end = len(lines[last].encode("utf-16-le", "surrogatepass")) // 2
    return types.Range(types.Position(first, 0), types.Position(last, end))
