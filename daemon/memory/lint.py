"""Validating memory files as they are on disk, with workspace-wide rules from their folder.

A record is judged together with its sibling records (duplicate names, the record limit) and
`MEMORY.md` against what those records render to, exactly as the store would judge them.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from .canonical import decode
from .diagnostics import Diagnostic
from .record import GLOBAL_FILE, INDEX_FILE, record_name_of
from .store import FileProblems
from .validation import validate_global, validate_workspace

_SKIPPED_DIRS = {"reviews", "debug"}


class NotMemoryFile(Exception):
    """A path given to the validator is missing or is not a Markdown memory file."""


def lint_paths(paths: list[Path]) -> list[FileProblems]:
    files = _expand(paths)
    reports: dict[Path, list[Diagnostic]] = {}
    by_folder: dict[Path, list[Path]] = defaultdict(list)
    for path in files:
        if path.name == GLOBAL_FILE:
            text, problems = decode(path.read_bytes())
            reports[path] = problems + validate_global(text)
        else:
            by_folder[path.parent].append(path)
    for folder, wanted in by_folder.items():
        reports.update(_lint_folder(folder, wanted))
    return [FileProblems(path=str(path), diagnostics=reports[path]) for path in files]


def _lint_folder(folder: Path, wanted: list[Path]) -> dict[Path, list[Diagnostic]]:
    reports = lint_workspace_folder(folder)
    return {path: reports[path.name] for path in wanted}


def lint_workspace_folder(
    folder: Path, edited: Mapping[str, str] | None = None
) -> dict[str, list[Diagnostic]]:
    """Diagnostics of every record and of `MEMORY.md` in `folder`, by file name.

    `edited` holds texts an editor has open (by file name); they stand in for the files, so the
    workspace-wide rules (duplicate names, the index in sync) see what the user sees.
    """
    edited = edited or {}
    names = _file_names(folder)
    decoded = {
        name: (edited[name], []) if name in edited else decode((folder / name).read_bytes())
        for name in sorted(names | set(edited))
        if record_name_of(name) is not None
    }
    index: tuple[str, list[Diagnostic]] | None = None
    if INDEX_FILE in edited:
        index = (edited[INDEX_FILE], [])
    elif INDEX_FILE in names:
        index = decode((folder / INDEX_FILE).read_bytes())
    parsed, index_problems = validate_workspace(
        {name: text for name, (text, _) in decoded.items()}, index[0] if index else None
    )
    reports = {name: problems + parsed[name].diagnostics for name, (_, problems) in decoded.items()}
    if index is not None:
        reports[INDEX_FILE] = index[1] + index_problems
    return reports


def _file_names(folder: Path) -> set[str]:
    # scandir's entry types spare a stat per file: this runs on every keystroke in the editor.
    try:
        with os.scandir(folder) as entries:
            return {e.name for e in entries if e.is_file()}
    except (FileNotFoundError, NotADirectoryError):
        return set()


def _expand(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(_memory_files_under(path))
        elif not path.exists():
            raise NotMemoryFile(f"{path}: no such file or folder")
        elif path.suffix != ".md" or path.name.startswith("."):
            raise NotMemoryFile(f"{path}: not a memory file (GLOBAL.md, MEMORY.md or a <name>.md record)")
        else:
            found.append(path)
    return sorted(dict.fromkeys(p.absolute() for p in found))


def _memory_files_under(folder: Path) -> list[Path]:
    found = []
    for path in sorted(folder.rglob("*.md")):
        relative = path.relative_to(folder).parts
        if path.is_file() and not _SKIPPED_DIRS.intersection(relative[:-1]) and not path.name.startswith("."):
            found.append(path)
    return found
