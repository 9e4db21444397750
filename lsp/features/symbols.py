"""Document symbols for `GLOBAL.md`: its Markdown headings as a tree, for the outline.

A heading's symbol spans its section: up to the next heading of the same or a higher level.
ATX headings (`#` to `######`) count; lines inside fenced code blocks never do. A client
without hierarchical symbols gets the same headings flat, each naming its parent.

The answer is bounded as the validator bounds the file (decision 0225): only headings within
`GLOBAL.md`'s budget (24 KiB) are listed, what lies past it cannot reach an agent, and a text
over the most remem reads of a memory file (4 MiB) gets no symbols. A section still open at the
budget ends where it does in the whole text, at the next heading of its level or a higher one
past the budget (decision 0433), found by searching the rest for the next heading that could end
one (a title-less one never can) and jumping over each fenced block before it with one search for
its closing line: linear, in constant memory, the Python work per candidate heading and per block
before one (a text of fences alone, or of `# ` lines alone, is one search). Sections are found in
one pass, so
a heading-dense text costs no more than a long one.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from lsprotocol import types
from pygls.capabilities import get_capability

from remem.daemon.memory.canonical import too_large
from remem.daemon.memory.record import GLOBAL_MAX_BYTES

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
        if too_large(document.source):  # judged only by its size: nothing of it is read
            return []
        lines = lines_of(document.source)
        found = headings(lines, GLOBAL_MAX_BYTES)
        hierarchical = "text_document.document_symbol.hierarchical_document_symbol_support"
        if get_capability(ls.client_capabilities, hierarchical, False):
            return _tree(found, lines)
        return _flat(found, lines, params.text_document.uri)


def headings(lines: list[str], budget: int | None = None) -> list[Heading]:
    """The headings of Markdown `lines`, each with the last line of its section; with `budget`,
    only those that start within its first `budget` UTF-8 bytes, their sections as they are in
    the whole text (ended by a heading past the budget, found as in `_ended_past`)."""
    found: list[Heading] = []
    open_sections: list[tuple[int, str, int]] = []  # (level, title, line) of headings whose section goes on
    fence: str | None = None
    used = 0
    for number, line in enumerate(lines):
        if budget is not None:
            used += len(line) if line.isascii() else len(line.encode("utf-8", "surrogatepass"))
            if used > budget:
                _ended_past(lines, number, fence, open_sections, found)
                break
            used += 1  # its line break
        marks = _FENCE.match(line)
        if fence is not None:
            if marks is not None and _closes(marks, fence):
                fence = None
            continue
        if marks is not None:
            fence = marks.group(1)
            continue
        heading = _heading(line)
        if heading is not None:
            level, title = heading
            while open_sections and open_sections[-1][0] >= level:
                _ended(found, open_sections.pop(), number - 1)
            open_sections.append((level, title, number))
    while open_sections:
        _ended(found, open_sections.pop(), len(lines) - 1)
    found.sort(key=lambda heading: heading.line)
    return found


def _heading(line: str) -> tuple[int, str] | None:
    """The level and title of the heading `line` is; None if it is none (a `#` with no title)."""
    heading = _HEADING.fullmatch(line)
    title = (heading.group(2) or "").strip() if heading is not None else ""
    return (len(heading.group(1)), title) if heading is not None and title else None


# A line past the budget that may end a section still open: a heading of at most the level of
# the innermost one (by that level), with more than whitespace past its marks' space (a `# ` line
# has no title: 4 MiB of them were 5 s of Python, one line at a time); and a fence, which opens a
# block no heading in ends one. `_EITHER` finds the first of both, a fence named.
_HEADS = [rf"#{{1,{level}}}[ \t][^\S\n]*\S" for level in range(1, 7)]
_MAY_END = [re.compile(rf"^ {{0,3}}{heads}", re.MULTILINE) for heads in _HEADS]
_EITHER = [re.compile(rf"^ {{0,3}}(?:(?P<fence>`{{3,}}|~{{3,}})|{heads})", re.MULTILINE) for heads in _HEADS]
# How many blocks in a row are jumped before the next heading is looked for first: after a heading
# found in a block, the next ones are likely in blocks too (one search a block, not two), and a
# text of fences alone is still one search.
_TRUSTED = 8


def _ended_past(
    lines: list[str],
    first: int,
    fence: str | None,
    open_sections: list[tuple[int, str, int]],
    found: list[Heading],
) -> None:
    """End the sections still open at the budget (`first` the first line past it) where they
    end in the whole text: at the next heading of their level or a higher one, none of which is
    listed. Linear, in constant memory: the lines past the budget are searched as one text for
    the next heading that could end one, and only the fenced blocks before it are looked at,
    each jumped over by one search for its closing line (a text with no such heading, however
    many fences it holds, is one search; lines are counted only up to a heading)."""
    rest = "\n".join(lines[first:])
    number, counted = first, 0  # a line, and where it starts in `rest`
    at = 0 if fence is None else _past_block(rest, fence, 0)  # where the search goes on
    while open_sections and (candidate := _next_outside(rest, at, open_sections[-1][0])) is not None:
        number, counted = number + rest.count("\n", counted, candidate.start()), candidate.start()
        line = lines[number]
        if (heading := _heading(line)) is not None:  # none when it has no title
            while open_sections and open_sections[-1][0] >= heading[0]:
                _ended(found, open_sections.pop(), number - 1)
        at = candidate.start() + len(line) + 1


def _next_outside(rest: str, at: int, level: int) -> re.Match[str] | None:
    """The next line from `at` that may end a section of `level`, in no fenced block: the next
    one is looked for first, then the blocks before it jumped; once one lay in a block, blocks
    and lines are looked for together (`_TRUSTED` blocks in a row at most)."""
    may_end, either, end = _MAY_END[level - 1].search, _EITHER[level - 1].search, len(rest)
    ahead: re.Match[str] | None = None  # the next such line, blocks or not: no search goes past it
    limit, jumped = end, _TRUSTED
    while True:
        if ahead is None and jumped >= _TRUSTED:
            ahead, jumped = may_end(rest, at), 0
            if ahead is None:
                return None
            limit = ahead.end()
        found = either(rest, at, limit)
        if found is None or (fence := found["fence"]) is None:
            return found
        closing = _closing(fence).search(rest, found.end())
        if closing is None:  # open to the end
            return None
        at, jumped = closing.end() + 1, jumped + 1
        if at > limit:  # the line looked for lay in that block: each part of the text is searched once
            ahead, limit = None, end


def _past_block(rest: str, fence: str, at: int) -> int:
    """Where the line after the one closing the block `fence` opened starts (`at` on the line
    that opened it); past the text's end when none closes it."""
    closing = _closing(fence).search(rest, at)
    return len(rest) + 1 if closing is None else closing.end() + 1


@functools.lru_cache(maxsize=64)
def _closing(fence: str) -> re.Pattern[str]:
    """A line that closes the block `fence` opened, as `_closes` judges one."""
    return re.compile(rf"^ {{0,3}}{re.escape(fence)}{re.escape(fence[0])}*[^\S\n]*$", re.MULTILINE)


def _ended(found: list[Heading], section: tuple[int, str, int], last: int) -> None:
    level, title, line = section
    found.append(Heading(level, title, line, last))


def _closes(marks: re.Match[str], fence: str) -> bool:
    """Whether a fence line closes the block `fence` opened: the same mark, as long, nothing after."""
    found = marks.group(1)
    return found[0] == fence[0] and len(found) >= len(fence) and not marks.string[marks.end() :].strip()


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
