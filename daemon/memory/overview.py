"""Global and one workspace's records judged for the memory overview: valid, and how many problems.

Texts an editor holds unsaved stand in for their files, as in live validation, so the view
shows what the user sees; a file is valid without errors, and its problems count its
warnings too. A linked workspace folder is never followed out of REMEM_HOME, and files are read
as the store reads them: never through a symlink, never waiting on a FIFO, never past the cap. A
file the store would refuse unread is shown as lint reports it, without being read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..home import Home
from ..protocol.overview import Health, RecordRow, WorkspaceFolder
from .canonical import FILE_TOO_LARGE, IRREGULAR_GLOBAL, IRREGULAR_RECORD, Unread, decode, read_memory_bytes
from .diagnostics import Diagnostic, has_errors
from .identity import WorkspaceId
from .lint import lint_workspace_folder
from .record import INDEX_FILE, record_name_of
from .validation import parse_record, validate_global


def global_health(home: Home, unsaved: str | None) -> Health:
    home.refuse_link(home.memory)  # a link there leads out of the home; GLOBAL.md's own is shown
    path = home.global_file
    if unsaved is not None:
        return _health(path, validate_global(unsaved))
    text, problems = _read(path, IRREGULAR_GLOBAL) or ("", [])  # none yet: empty, as the store reads it
    if text is None:
        return _health(path, problems)
    return _health(path, problems + validate_global(text))


def workspace_health(
    home: Home, workspace: WorkspaceId, unsaved: Mapping[str, str]
) -> tuple[WorkspaceFolder, list[RecordRow]]:
    """Where the workspace's memory is, and each record with its health, by file name."""
    folder = home.workspaces / workspace.key
    home.refuse_link(home.workspaces)  # a link at `memory` or `workspaces` leads out of the home
    present = folder.is_dir() and not folder.is_symlink()
    index = folder / INDEX_FILE
    where = WorkspaceFolder(
        key=workspace.key,
        folder=str(folder) if present else None,
        index=str(index) if present and index.is_file() else None,
    )
    return where, _records(folder, unsaved) if present else []


def _records(folder: Path, unsaved: Mapping[str, str]) -> list[RecordRow]:
    reports = lint_workspace_folder(folder, unsaved)
    rows = []
    for name in sorted(n for n in reports if record_name_of(n) is not None):
        text: str | None = None  # a file lint reports unread stays unread: only its name is shown
        if name in unsaved:
            text = unsaved[name]
        elif not _UNREAD.intersection(d.code for d in reports[name]):
            read = _read(folder / name, IRREGULAR_RECORD)
            if read is None:
                continue  # deleted since it was validated: the next overview will not list it
            text = read[0]
        fields = parse_record(text, name).fields if text is not None else {}
        rows.append(
            RecordRow(
                name=fields.get("name") or str(record_name_of(name)),
                description=fields.get("description", ""),
                type=fields.get("type", ""),
                **_health(folder / name, reports[name]).model_dump(),
            )
        )
    return rows


_UNREAD = frozenset({IRREGULAR_RECORD.code, FILE_TOO_LARGE.code})


def _read(path: Path, irregular: Diagnostic) -> tuple[str | None, list[Diagnostic]] | None:
    """A memory file's text and its decoding problems, None when it is absent; a file the
    store does not read (`read_memory_bytes`) is not read here either: no text, and why."""
    try:
        raw = read_memory_bytes(path, irregular)
    except Unread as exc:
        return None, [exc.diagnostic]
    return None if raw is None else decode(raw)


def _health(path: Path, problems: list[Diagnostic]) -> Health:
    return Health(path=str(path), valid=not has_errors(problems), problems=len(problems))
