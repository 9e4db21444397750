"""Global and one workspace's records judged for the memory overview: valid, and how many problems.

Texts an editor holds unsaved stand in for their files, as in live validation, so the view
shows what the user sees; a file is valid without errors, and its problems count its
warnings too. A linked workspace folder is never followed out of REMEM_HOME.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..home import Home
from ..protocol.overview import Health, RecordRow, WorkspaceFolder
from .canonical import decode
from .diagnostics import Diagnostic, has_errors
from .identity import WorkspaceId
from .lint import lint_workspace_folder
from .record import INDEX_FILE, record_name_of
from .validation import parse_record, validate_global


def global_health(home: Home, unsaved: str | None) -> Health:
    path = home.global_file
    if unsaved is not None:
        return _health(path, validate_global(unsaved))
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raw = b""  # no Global memory yet: an empty one, as the store reads it
    text, problems = decode(raw)
    return _health(path, problems + validate_global(text))


def workspace_health(
    home: Home, workspace: WorkspaceId, unsaved: Mapping[str, str]
) -> tuple[WorkspaceFolder, list[RecordRow]]:
    """Where the workspace's memory is, and each record with its health, by file name."""
    folder = home.workspaces / workspace.key
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
        try:
            text = unsaved[name] if name in unsaved else decode((folder / name).read_bytes())[0]
        except FileNotFoundError:
            continue  # deleted since it was validated: the next overview will not list it
        fields = parse_record(text, name).fields
        rows.append(
            RecordRow(
                name=fields.get("name") or str(record_name_of(name)),
                description=fields.get("description", ""),
                type=fields.get("type", ""),
                **_health(folder / name, reports[name]).model_dump(),
            )
        )
    return rows


def _health(path: Path, problems: list[Diagnostic]) -> Health:
    return Health(path=str(path), valid=not has_errors(problems), problems=len(problems))
