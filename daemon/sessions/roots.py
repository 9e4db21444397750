"""A session root as a whole: its single encoding, every log in it, lookup by id.

DSH refuses a root that mixes `session.jsonl` and `session.jsonl.zstd`, and flat
`<project>/<id>.jsonl[.zstd]` files; one unreadable log never hides the others, so a scan
returns per-log errors next to the logs that did read.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ..os_names import is_utf8, shown
from ..safe_open import NOT_REGULAR, kind_of
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


def folder_entries(path: str, rejected: list[Rejected]) -> list[os.DirEntry[str]]:
    """The entries of the folder `path`, by name: none when it is gone, and a refusal of it
    (`unreadable_folder`) when it cannot be read, so its sessions are not lost unsaid."""
    try:
        return sorted(os.scandir(path), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        rejected.append(Rejected(path, unreadable_folder(exc)))
        return []


class _Refusal(NamedTuple):
    path: Path
    reason: str


class Rejected(_Refusal):
    """Something in a root that looks like a session but is not read, and why. Its path is kept
    by its shown name (`shown_path`) whatever the caller passes: a refusal is stored and sent as
    UTF-8, and it is often of a name that is not (a link or a stray file is refused before its
    name is checked), so no branch that refuses can forget it (decision 0495)."""

    def __new__(cls, path: str | Path, reason: str) -> Rejected:
        return super().__new__(cls, shown_path(str(path)), reason)


FLAT_REASON = "flat log file outside a session directory; DSH only reads <project>/<session>/<log>"
# A link could lead a listing, a transcript or a fork's copy to any file of the user's.
LINK_REASON = "a symbolic link; remem reads only real folders and files inside a session root"


def not_regular(mode: int) -> str:
    """Why something named like a session log that is not a regular file is not listed. It is
    never opened: a FIFO would wait for a writer for good."""
    kind = kind_of(mode)
    return f"{NOT_REGULAR} ({kind}), though named like a session log: it is not read; remove or rename it"


def unreadable_folder(exc: OSError) -> str:
    """Why a folder of a root whose entries cannot be read (`exc`) is not listed."""
    said = exc.strerror or str(exc)
    denied = exc.errno in (errno.EACCES, errno.EPERM)
    fix = "; let your user read and enter it (chmod u+rx) to list them" if denied else ""
    return f"folder cannot be read ({said}): the sessions in it are not listed{fix}"


# The index (SQLite) and every listing hold paths as UTF-8 text: a name that is not would
# fail the whole listing where it is stored or sent.
NAME_REASON = "file name is not valid UTF-8; rename it (or a folder on its path) to list it"


def shown_path(path: str) -> Path:
    """`path` with its undecodable bytes written as `\\xNN`: so it can be stored and printed."""
    return Path(shown(path))


def _logs_in(session_dir: str, rejected: list[Rejected]) -> Iterator[tuple[Encoding, LogFile]]:
    """The logs of the session folder `session_dir`; what is named like one and is not a
    regular file (a link, a FIFO, a folder), or a folder that cannot be looked into, is
    refused."""
    for encoding, name in LOG_FILE_NAMES.items():
        path = f"{session_dir}/{name}"
        try:
            st = os.stat(path, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:  # the folder, not each log name in it
            rejected.append(Rejected(session_dir, unreadable_folder(exc)))
            return
        if not is_utf8(path):
            rejected.append(Rejected(path, NAME_REASON))
        elif stat.S_ISREG(st.st_mode):
            yield encoding, LogFile(path, st)
        elif stat.S_ISLNK(st.st_mode):
            rejected.append(Rejected(path, LINK_REASON))
        else:
            rejected.append(Rejected(path, not_regular(st.st_mode)))


def _projects(
    root: Path, only: str | None, rejected: list[Rejected], passed: str | None = None
) -> list[os.DirEntry[str]]:
    entries = folder_entries(str(root), rejected)
    if only is not None:
        return [e for e in entries if e.name == only]
    return entries if passed is None else [e for e in entries if e.name != passed]


def _log_files(
    root: Path, project_dir: str | None = None, passed: str | None = None
) -> tuple[dict[Encoding, list[LogFile]], list[Rejected]]:
    """Session log files by encoding, plus what DSH or remem would refuse (plain strings: speed);
    of the one project directory `project_dir` when it is given, else of every one but `passed`."""
    found: dict[Encoding, list[LogFile]] = defaultdict(list)
    rejected: list[Rejected] = []
    for project in _projects(root, project_dir, rejected, passed):
        if project.name.startswith("."):
            continue  # a project folder is always `--<slug>--`: a dot folder is no project
        if project.is_symlink():
            rejected.append(Rejected(project.path, LINK_REASON))
            continue
        if not project.is_dir(follow_symlinks=False):
            continue
        # No dot filter here: DSH keeps a leading `.` of a session id in its folder's name.
        for entry in folder_entries(project.path, rejected):
            if entry.is_symlink():
                rejected.append(Rejected(entry.path, LINK_REASON))
            elif entry.is_dir(follow_symlinks=False):
                for encoding, log in _logs_in(entry.path, rejected):
                    found[encoding].append(log)
            elif entry.is_file(follow_symlinks=False) and FLAT_LOG_NAME.match(entry.name):
                rejected.append(Rejected(entry.path, FLAT_REASON))
    return found, rejected


def project_logs(root: Path, name: str) -> tuple[dict[Encoding, list[LogFile]], list[Rejected]]:
    """The logs (by encoding) and refusals of the one project folder `name` of `root`."""
    return _log_files(root, name)


def single_encoding(root: Path, found: dict[Encoding, list[LogFile]]) -> Encoding | None:
    present = [e for e in Encoding if found.get(e)]
    if len(present) > 1:
        examples = ", ".join(str(Path(found[e][0].path).relative_to(root)) for e in present)
        raise SessionRootError(
            root,
            f"root mixes raw and zstd session logs (e.g. {examples}); DSH refuses the whole root. "
            "Convert the minority encoding or move those sessions to another root.",
        )
    return present[0] if present else None


def list_logs(
    root: Path, project_dir: str | None = None, passed: str | None = None
) -> tuple[list[LogFile], list[Rejected]]:
    """The root's log files (one encoding) and what is refused; mixed roots raise.

    With `project_dir` (a `projectKey`), only that directory is looked at, and so only it is
    checked for mixed encodings: a workspace costs what it holds (decision 0061). Without it,
    the project directory `passed` is not looked at (remem's own review sessions, decision 0466).
    """
    found, rejected = _log_files(root, project_dir, passed)
    encoding = single_encoding(root, found)
    return (found[encoding] if encoding else []), rejected


def root_fingerprint(root: Path) -> str:
    """A digest of what a listing of `root` depends on: every log's path and stat revision.

    Equal fingerprints mean nothing to re-list; temp files, locks and reads never change it.
    """
    found, rejected = _log_files(root)
    return files_fingerprint([f for files in found.values() for f in files], rejected)


def files_fingerprint(logs: list[LogFile], rejected: list[Rejected]) -> str:
    """The digest `root_fingerprint` makes of a root's log files and refusals. ctime is in it: a
    log rewritten in place at its size with its mtime put back, or a chmod, changes only that."""
    digest = hashlib.sha256()
    for log in sorted(logs, key=lambda f: f.path):
        st = log.stat
        digest.update(
            os.fsencode(log.path)
            + f"\0{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}\n".encode()
        )
    for path, reason in sorted(rejected):
        digest.update(os.fsencode(path) + f"\0{reason}\n".encode())
    return digest.hexdigest()


def detect_encoding(root: Path) -> Encoding | None:
    """The encoding the root's logs use, None for an empty root; mixed roots raise."""
    found, _ = _log_files(root)
    return single_encoding(root, found)


def _flag_duplicates(scan: RootScan) -> None:
    by_id: dict[str, list[SessionLog]] = defaultdict(list)
    for log in scan.logs:
        by_id[log.header.id].append(log)
    for session_id, logs in by_id.items():
        if len(logs) > 1:
            for log in logs:
                others = [str(o.path) for o in logs if o is not log]
                scan.errors.append(SessionLogError(log.path, duplicate_id(session_id, others)))
                scan.logs.remove(log)


def scan_root(root: Path) -> RootScan:
    """Read every log under `root`; raises `SessionRootError` only for a mixed-encoding root."""
    found, rejected = _log_files(root)
    encoding = single_encoding(root, found)
    scan = RootScan(root, encoding)
    scan.errors.extend(SessionLogError(path, reason) for path, reason in rejected)
    for log in found.get(encoding, []) if encoding else []:
        try:
            scan.logs.append(read_session(Path(log.path)))
        except SessionLogError as exc:
            scan.errors.append(exc)
    _flag_duplicates(scan)
    return scan


def duplicate_id(session_id: str | None, others: list[str]) -> str:
    """Why a log whose id another log has too is not listed (a backup copy in a root, say)."""
    return (
        f"session id {session_id!r} also exists at {', '.join(others)}: remem lists neither copy "
        "while both are in its roots; move or remove the one that is not the session"
    )
