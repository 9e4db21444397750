"""Hover: a record's description, type, provenance and last review.

It answers on a record's name in `MEMORY.md` and anywhere on a record's front matter. The record
is read as the editor has it (its file otherwise); a record with errors says how many, since
its fields cannot be trusted yet. A name whose file cannot be read says why: none there, a link
(which remem never follows), something else than a file, or the error reading it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from lsprotocol import types

from remem.daemon.memory.diagnostics import Severity, TextPositions
from remem.daemon.memory.record import TYPE_MEANINGS, RecordType
from remem.daemon.memory.validation import ParsedRecord, parse_record
from remem.daemon.safe_open import LINK, kind_at, open_regular

from ..documents import (
    Kind,
    MemoryFile,
    lines_of,
    lsp_range,
    memory_file,
    offset_at,
    opened,
    text_of,
    whole_lines,
)
from ..front_matter import locate
from ..provenance import History, history
from ..server import RememServer
from .links import record_links


def register(server: RememServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: RememServer, params: types.HoverParams) -> types.Hover | None:
        file = memory_file(ls, params.text_document.uri)
        document = opened(ls, params.text_document.uri)
        if file is None or file.kind is Kind.GLOBAL or document is None:
            return None
        text = document.source
        found = _target(file, text, params.position)
        if found is None:
            return None
        name, where = found
        record_text = text if file.kind is Kind.RECORD else text_of(ls, file.path.parent / name)
        if record_text is None:
            contents = _unread(file.path.parent / name)
        else:
            parsed = parse_record(record_text, name)
            known = await history(ls, file.key, parsed.record) if parsed.record is not None else None
            contents = _describe(name, parsed, known)
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, contents), where)


def _target(file: MemoryFile, text: str, position: types.Position) -> tuple[str, types.Range] | None:
    """The record file a hover is about, and the range it answers for."""
    if file.kind is Kind.INDEX:
        at = offset_at(text, position)
        link = next((k for k in record_links(text, file.path.parent) if k.start <= at < k.end), None)
        return (
            None if link is None else (link.path.name, lsp_range(TextPositions(text), link.start, link.end))
        )
    front = locate(lines_of(text))
    if front is None or not front.covers(position.line):
        return None
    entry = front.entry_at(position.line)
    return file.path.name, whole_lines(entry.first, entry.last) if entry else whole_lines(0, front.closing)


def _unread(path: Path) -> str:
    """Why the record file a `MEMORY.md` link names has no text: it is tried again as it was
    read (`text_of`: never through a link, nor waiting on a FIFO), and what stands there said."""
    try:
        os.close(open_regular(path))
    except FileNotFoundError:
        return f"No record file `{path.name}` exists in this workspace; regenerate MEMORY.md."
    except OSError as error:
        kind = kind_at(path)
        if kind == LINK:
            return (
                f"No record file `{path.name}`: it is {LINK}, which remem does not follow (it could "
                "lead out of REMEM_HOME); replace it with a plain copy of the file it points to."
            )
        if error.errno == errno.EINVAL and kind is not None:
            return f"No record file `{path.name}`: it is {kind}, and a record must be a regular file."
        return f"`{path.name}` cannot be read ({error.strerror}), so what this record holds is not known."
    return f"`{path.name}` could not be read as it was hovered; hover again to see it."


def _describe(file_name: str, parsed: ParsedRecord, found: History | None) -> str:
    record = parsed.record
    if record is None:
        errors = sum(1 for d in parsed.diagnostics if d.severity is Severity.ERROR)
        return f"`{file_name}` has {errors} error(s); fix them to see what this record holds."
    meaning = TYPE_MEANINGS.get(RecordType(record.type), "")
    parts = [f"**{record.name}** · {record.type} ({meaning})", record.description]
    return "\n\n".join(parts + _history(found))


def _history(found: History | None) -> list[str]:
    if found is not None and found.unread is not None:
        return [f"**Last review:** not known; the reviews cannot be read ({found.unread})."]
    if found is None or found.last is None:
        return ["**Last review:** none; no review has changed this record."]
    provenance = found.provenance
    if provenance is None:
        last = found.last
        since = "it was written again by hand since" if last.action == "delete" else "changed by hand since"
        what = "deleted this record" if last.action == "delete" else "wrote this record"
        return [f"**Last review:** `{last.review}` {what} ({last.completedAt}); {since}."]
    return [
        f"**Provenance:** from {provenance.source()}, {provenance.where()} (session `{provenance.session}`)",
        f"**Last review:** `{provenance.review}`, committed {provenance.completedAt}",
    ]
