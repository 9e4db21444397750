"""Completion in a record's front matter: the keys it still lacks, and the values of `type`.

At the start of a front-matter line it offers `name` (filled with the file's name when the
store accepts that as a name), `description` and `type`, each only while the record lacks it.
After `type:` it offers the three record types with their meaning. `GLOBAL.md` is free Markdown
(it has no front matter rules), so nothing is offered there.
"""

from __future__ import annotations

from lsprotocol import types

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
        before = lines[line][:column]
        if ":" not in before:
            return _keys(file, front, line, params.position)
        key, _, _ = before.partition(":")
        return _types(line, len(key) + 1, params.position) if key == "type" else None


def _keys(
    file: MemoryFile, front: FrontMatter, line: int, position: types.Position
) -> list[types.CompletionItem] | None:
    here = front.entry_at(line)
    if here is not None and here.first != line:
        return None  # inside a value that spans lines
    typed = types.Range(types.Position(line, 0), position)
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
                detail=f"{key}: {value}".rstrip() if value else None,
                documentation=_KEY_HELP[key],
                text_edit=types.TextEdit(typed, f"{key}: {value}"),
                sort_text=str(order),
            )
        )
    return items


def _types(line: int, after_colon: int, position: types.Position) -> list[types.CompletionItem]:
    typed = types.Range(types.Position(line, after_colon), position)
    return [
        types.CompletionItem(
            label=kind.value,
            kind=types.CompletionItemKind.EnumMember,
            documentation=meaning,
            filter_text=f" {kind.value}",
            text_edit=types.TextEdit(typed, f" {kind.value}"),
        )
        for kind, meaning in TYPE_MEANINGS.items()
    ]
