"""Document links from `MEMORY.md` entries to the record files they name.

An entry is `- [name](name.md) — description`; the link sits on the name and opens the record.
Only plain file names in the same folder count (never a path: `../x.md` must not lead out of
the workspace), and only records that exist as regular files are linked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types

from remem.daemon.memory.diagnostics import TextPositions
from remem.daemon.memory.record import record_name_of

from ..documents import Kind, lsp_range, memory_file, opened
from ..server import RememServer

_LINK = re.compile(r"\[([^\]\r\n]+)\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class RecordLink:
    name: str
    path: Path
    start: int  # offsets in the text: the whole `[name](file)`
    end: int
    name_start: int  # and the name alone, where the link sits
    name_end: int


def register(server: RememServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_LINK, types.DocumentLinkOptions(resolve_provider=False))
    def document_link(ls: RememServer, params: types.DocumentLinkParams) -> list[types.DocumentLink] | None:
        file = memory_file(ls, params.text_document.uri)
        document = opened(ls, params.text_document.uri)
        if file is None or file.kind is not Kind.INDEX or document is None:
            return None
        text = document.source
        positions = TextPositions(text)
        return [
            types.DocumentLink(
                range=lsp_range(positions, link.name_start, link.name_end),
                target=link.path.as_uri(),
                tooltip=f"Open the record `{link.name}`",
            )
            for link in record_links(text, file.path.parent)
            if link.path.is_file() and not link.path.is_symlink()
        ]


def record_links(text: str, folder: Path) -> Iterator[RecordLink]:
    """The links of an index text that name a record file of `folder`."""
    for match in _LINK.finditer(text):
        target = match.group(2)
        if "/" in target or "\\" in target or record_name_of(target) is None:
            continue
        yield RecordLink(match.group(1), folder / target, match.start(), match.end(), *match.span(1))
