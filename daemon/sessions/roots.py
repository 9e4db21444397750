"""A session root as a whole: its single encoding, every log in it, lookup by id.

DSH refuses a root that mixes `session.jsonl` and `session.jsonl.zstd`, and flat
`<project>/<id>.jsonl[.zstd]` files; one unreadable log never hides the others, so a scan
returns per-log errors next to the logs that did read.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .errors import SessionLogError, SessionRootError
from .paths import FLAT_LOG_NAME, LOG_FILE_NAMES, Encoding, encode_segment
from .reader import SessionLog, read_session


@dataclass
class RootScan:
    """Every log of a root that read cleanly, and one error per log that did not."""

    root: Path
    encoding: Encoding | None
    logs: list[SessionLog] = field(default_factory=list)
    errors: list[SessionLogError] = field(default_factory=list)


def _visible_dirs(path: Path) -> list[Path]:
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [Path(e.path) for e in entries if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)]


def _flat_logs(project: Path) -> list[Path]:
    return sorted(
        Path(e.path)
        for e in os.scandir(project)
        if e.is_file(follow_symlinks=False) and FLAT_LOG_NAME.match(e.name) and not e.name.startswith(".")
    )


def _log_files(root: Path) -> tuple[dict[Encoding, list[Path]], list[Path]]:
    """Session log files by encoding, plus flat files DSH would reject."""
    found: dict[Encoding, list[Path]] = defaultdict(list)
    flat: list[Path] = []
    for project in _visible_dirs(root):
        flat.extend(_flat_logs(project))
        for session in _visible_dirs(project):
            for encoding, name in LOG_FILE_NAMES.items():
                if (session / name).is_file():
                    found[encoding].append(session / name)
    return found, flat


def _single_encoding(root: Path, found: dict[Encoding, list[Path]]) -> Encoding | None:
    present = [e for e in Encoding if found.get(e)]
    if len(present) > 1:
        examples = ", ".join(str(found[e][0].relative_to(root)) for e in present)
        raise SessionRootError(
            root,
            f"root mixes raw and zstd session logs (e.g. {examples}); DSH refuses the whole root. "
            "Convert the minority encoding or move those sessions to another root.",
        )
    return present[0] if present else None


def list_logs(root: Path) -> tuple[list[Path], list[Path]]:
    """The root's log files (one encoding) and its flat files; mixed roots raise."""
    found, flat = _log_files(root)
    encoding = _single_encoding(root, found)
    return (found[encoding] if encoding else []), flat


def detect_encoding(root: Path) -> Encoding | None:
    """The encoding the root's logs use, None for an empty root; mixed roots raise."""
    found, _ = _log_files(root)
    return _single_encoding(root, found)


def _flag_duplicates(scan: RootScan) -> None:
    by_id: dict[str, list[SessionLog]] = defaultdict(list)
    for log in scan.logs:
        by_id[log.header.id].append(log)
    for session_id, logs in by_id.items():
        if len(logs) > 1:
            for log in logs:
                others = ", ".join(str(o.path) for o in logs if o is not log)
                scan.errors.append(
                    SessionLogError(log.path, f"session id {session_id!r} also exists at {others}")
                )
                scan.logs.remove(log)


def scan_root(root: Path) -> RootScan:
    """Read every log under `root`; raises `SessionRootError` only for a mixed-encoding root."""
    found, flat = _log_files(root)
    encoding = _single_encoding(root, found)
    scan = RootScan(root, encoding)
    scan.errors.extend(
        SessionLogError(
            p, "flat log file outside a session directory; DSH only reads <project>/<session>/<log>"
        )
        for p in flat
    )
    for path in found.get(encoding, []) if encoding else []:
        try:
            scan.logs.append(read_session(path))
        except SessionLogError as exc:
            scan.errors.append(exc)
    _flag_duplicates(scan)
    return scan


def find_session(root: Path, session_id: str) -> SessionLog:
    """The log of `session_id` in any project dir of `root` (the id must be unique)."""
    encoding = detect_encoding(root)
    segment = encode_segment(session_id)
    candidates = [
        project / segment / encoding.file_name
        for project in _visible_dirs(root)
        if encoding and (project / segment / encoding.file_name).is_file()
    ]
    if not candidates:
        raise SessionLogError(root / segment, f"no session {session_id!r} in this root")
    if len(candidates) > 1:
        raise SessionLogError(
            candidates[0], f"session id {session_id!r} exists in {len(candidates)} project dirs"
        )
    return read_session(candidates[0], expected_id=session_id)
