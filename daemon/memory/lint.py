"""Validating memory files as they are on disk, with workspace-wide rules from their folder.

A record is judged together with its sibling records (duplicate names, the record limit) and
`MEMORY.md` against what those records render to, exactly as the store would judge them.
"""

from __future__ import annotations

from collections import defaultdict
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
    decoded = {
        entry.name: decode(entry.read_bytes())
        for entry in sorted(folder.iterdir())
        if record_name_of(entry.name) is not None and entry.is_file()
    }
    index_path = folder / INDEX_FILE
    index = decode(index_path.read_bytes()) if index_path.is_file() else None
    parsed, index_problems = validate_workspace(
        {name: text for name, (text, _) in decoded.items()}, index[0] if index else None
    )
    reports = {}
    for path in wanted:
        if path.name == INDEX_FILE:
            reports[path] = (index[1] if index else []) + index_problems
        else:
            reports[path] = decoded[path.name][1] + parsed[path.name].diagnostics
    return reports


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
