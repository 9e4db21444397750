"""A session root as a whole: its single encoding, every log in it, lookup by id.

DSH refuses a root that mixes `session.jsonl` and `session.jsonl.zstd`, and flat
`<project>/<id>.jsonl[.zstd]` files; one unreadable log never hides the others, so a scan
returns per-log errors next to the logs that did read.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .errors import SessionLogError, SessionRootError
from .paths import FLAT_LOG_NAME, LOG_FILE_NAMES, Encoding
from .reader import SessionLog, read_session


@dataclass
class RootScan:
    """Every log of a root that read cleanly, and one error per log that did not."""

    root: Path
    encoding: Encoding | None
    logs: list[SessionLog] = field(default_factory=list)
    errors: list[SessionLogError] = field(default_factory=list)


class LogFile(NamedTuple):
    """A log found in a root, with the stat taken while finding it (listings reuse it)."""

    path: str
    stat: os.stat_result


def _entries(path: str) -> list[os.DirEntry[str]]:
    try:
        return sorted(os.scandir(path), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _logs_in(session_dir: str) -> Iterator[tuple[Encoding, LogFile]]:
    for encoding, name in LOG_FILE_NAMES.items():
        path = f"{session_dir}/{name}"
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if stat.S_ISREG(st.st_mode):
            yield encoding, LogFile(path, st)


def _log_files(root: Path) -> tuple[dict[Encoding, list[LogFile]], list[Path]]:
    """Session log files by encoding, plus flat files DSH would reject (plain strings: listing speed)."""
    found: dict[Encoding, list[LogFile]] = defaultdict(list)
    flat: list[Path] = []
    for project in _entries(str(root)):
        if project.name.startswith(".") or not project.is_dir(follow_symlinks=False):
            continue
        for entry in _entries(project.path):
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                for encoding, log in _logs_in(entry.path):
                    found[encoding].append(log)
            elif entry.is_file(follow_symlinks=False) and FLAT_LOG_NAME.match(entry.name):
                flat.append(Path(entry.path))
    return found, flat


def _single_encoding(root: Path, found: dict[Encoding, list[LogFile]]) -> Encoding | None:
    present = [e for e in Encoding if found.get(e)]
    if len(present) > 1:
        examples = ", ".join(str(Path(found[e][0].path).relative_to(root)) for e in present)
        raise SessionRootError(
            root,
            f"root mixes raw and zstd session logs (e.g. {examples}); DSH refuses the whole root. "
            "Convert the minority encoding or move those sessions to another root.",
        )
    return present[0] if present else None


def list_logs(root: Path) -> tuple[list[LogFile], list[Path]]:
    """The root's log files (one encoding) and its flat files; mixed roots raise."""
    found, flat = _log_files(root)
    encoding = _single_encoding(root, found)
    return (found[encoding] if encoding else []), flat


def root_fingerprint(root: Path) -> str:
    """A digest of what a listing of `root` depends on: every log's path and stat revision.

    Equal fingerprints mean nothing to re-list; temp files, locks and reads never change it.
    """
    digest = hashlib.sha256()
    found, flat = _log_files(root)
    for log in sorted((f for files in found.values() for f in files), key=lambda f: f.path):
        st = log.stat
        digest.update(
            os.fsencode(log.path) + f"\0{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}\n".encode()
        )
    for path in sorted(flat):
        digest.update(os.fsencode(path) + b"\0flat\n")
    return digest.hexdigest()


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
    for log in found.get(encoding, []) if encoding else []:
        try:
            scan.logs.append(read_session(Path(log.path)))
        except SessionLogError as exc:
            scan.errors.append(exc)
    _flag_duplicates(scan)
    return scan
