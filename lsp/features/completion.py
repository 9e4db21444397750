"""Completion in a record's front matter: the keys it still lacks, and the values of `type`.

At the start of a front-matter line it offers `name` (filled with the file's name when the
store accepts that as a name), `description` and `type`, each only while the record lacks it.
After `type:` it offers the three record types with their meaning. `GLOBAL.md` is free Markdown
(it has no front matter rules), so nothing is offered there.

An item replaces what it completes, not only what is before the cursor: the whole key (a key
that has its colon already keeps it and its value), or the whole value of `type`. Replacing only
up to the cursor made `type: feed|bak` `type: feedbackbak`. A client that can choose (VS Code's
`editor.suggest.insertMode`) gets both ranges, an `InsertReplaceEdit`; any other the whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lsprotocol import types
from pygls.capabilities import get_capability

from remem.daemon.memory.record import DESCRIPTION_MAX, FIELDS, TYPE_MEANINGS

from ..documents import Kind, MemoryFile, file_name_as_record, lines_of, memory_file, offset_at, opened
from ..front_matter import FrontMatter, locate
from ..server import RememServer

_KEY_HELP = {
    "name": "The record's name: lowercase letters, digits and hyphens; the same as its file name.",
    "description": f"One line (at most {DESCRIPTION_MAX} characters) saying when this memory applies.",
    "type": "feedback, project or reference.",
}


def register(server: RememServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=[":"]))
    def completion(ls: RememServer, params: types.CompletionParams) -> list[types.CompletionItem] | None:
        file = memory_file(ls, params.text_document.uri)
        document = opened(ls, params.text_document.uri)
        if file is None or file.kind is not Kind.RECORD or document is None:
            return None
        text = document.source
        lines = lines_of(text)
        front = locate(lines, open_ended=True)
        line = params.position.line
        if front is None or not 0 < line < front.closing or line >= len(lines):
            return None
        column = offset_at(text, params.position) - offset_at(text, types.Position(line, 0))
        before, after = lines[line][:column], lines[line][column:]
        both = get_capability(
            ls.client_capabilities, "text_document.completion.completion_item.insert_replace_support", False
        )
        if ":" not in before:
            return _keys(file, front, _Span(line, 0, _units(before), after, both))
        key, _, _ = before.partition(":")
        if key != "type":
            return None
        return _types(_Span(line, len(key) + 1, _units(before), after.rstrip(), both))


_WORD = re.compile(r"[A-Za-z0-9_-]*")  # what a key is made of, and more: all of it is replaced


@dataclass(frozen=True)
class _Span:
    """Where an item goes on `line` (UTF-16 units): from `start` to the `cursor`, or on over
    what it replaces after the cursor; `rest` is the line's text after the cursor, `both`
    whether the client takes an insert and a replace range."""

    line: int
    start: int
    cursor: int
    rest: str
    both: bool

    def edit(self, new_text: str, replaced: str) -> types.TextEdit | types.InsertReplaceEdit:
        """`new_text` from `start` over the cursor and `replaced`, the text after it."""
        start = types.Position(self.line, self.start)
        whole = types.Range(start, types.Position(self.line, self.cursor + _units(replaced)))
        if not self.both:
            return types.TextEdit(whole, new_text)
        typed = types.Range(start, types.Position(self.line, self.cursor))
        return types.InsertReplaceEdit(new_text=new_text, insert=typed, replace=whole)


def _units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _keys(file: MemoryFile, front: FrontMatter, span: _Span) -> list[types.CompletionItem] | None:
    line = span.line
    here = front.entry_at(line)
    if here is not None and here.first != line:
        return None  # inside a value that spans lines
    word = _WORD.match(span.rest)
    assert word is not None  # it matches the empty string
    # A key with its colon already (`na|me: a`) is only renamed: its colon and value stay.
    keyed = span.rest[word.end() :].lstrip(" \t").startswith(":")
    items = []
    for order, key in enumerate(FIELDS):
        present = front.entry(key)
        if present is not None and present.first != line:
            continue
        value = (file_name_as_record(file.path) or "") if key == "name" else ""
        items.append(
            types.CompletionItem(
                label=key,
                kind=types.CompletionItemKind.Property,
                detail=f"{key}: {value}".rstrip() if value and not keyed else None,
                documentation=_KEY_HELP[key],
                text_edit=span.edit(key if keyed else f"{key}: {value}", word.group()),
                sort_text=str(order),
            )
        )
    return items


def _types(span: _Span) -> list[types.CompletionItem]:
    # The value is one word: all of it after the cursor is replaced, up to the line's end.
    return [
        types.CompletionItem(
            label=kind.value,
            kind=types.CompletionItemKind.EnumMember,
            documentation=meaning,
            filter_text=f" {kind.value}",
            text_edit=span.edit(f" {kind.value}", span.rest),
        )
        for kind, meaning in TYPE_MEANINGS.items()
    ]
