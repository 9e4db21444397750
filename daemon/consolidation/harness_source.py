"""One observation of a Claude Code or Codex session file, as consolidation freezes and re-checks it.

The file is read once, through a descriptor that refuses a symbolic link, and everything a
review needs is taken from those bytes: the session id and cwd (from the records, never the
folder name), the content digest that binds the review id (the catalog's for these formats,
sha256 of the bytes: the same bytes are the same review), and liveness. A harness holds no lock remem can
see, so a file changed within `sessions.idle_seconds` is live: the harness may still be
writing it. A quiet file that a live process still holds open for writing (Codex holds its
rollout for the whole session) is live too; that is asked once per request, before this read,
by the runner's eligibility, for every format (`sessions/writers.py`, decision 0357). So is a
Claude Code session a live Claude Code process runs, by the listing's liveness
(`sessions/claude_processes.py`, decision 0376). Two observations with the same path, digest
and no liveness are the same source.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..sessions.catalog import recently_changed
from ..sessions.formats.claude_code import read_transcript
from ..sessions.formats.codex import read_rollout
from ..sessions.formats.jsonl import LineTooLong
from ..sessions.formats.model import Harness
from ..sessions.harness_sources import codex_history, content_digest, read_file_stat
from ..sessions.reader import stat_revision
from .evidence import Evidence
from .harness_evidence import project_harness


class Unreadable(Exception):
    """The file cannot be read as a session of its harness; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class HarnessFile:
    harness: Harness
    path: Path
    data: bytes
    digest: str
    session_id: str
    cwd: str | None
    lines: int  # the last line the review covers (its receipt's `coveredSeq`)
    live: bool
    revision: str  # the file's, as the bytes were read
    changed_ns: int = 0  # the file's mtime, as the bytes were read
    fork_turn: int = 0  # a fork's last turn copied from its parent (0: not a fork)

    def evidence(self) -> Evidence:
        """Its turns as the model still sees them, a fork's copied ones left out (decision 0380):
        those its `forkedFrom` lines mark. A `--fork-session` copy's unmarked ones stay in
        (decision 0517)."""
        return project_harness(self.harness, self.path.name, self.data, self.fork_turn)

    def same_as(self, other: HarnessFile) -> bool:
        return not other.live and (other.path, other.digest) == (self.path, self.digest)


def observe(harness: Harness, path: Path, idle_seconds: int) -> HarnessFile:
    """Read `path` once; raises `Unreadable` when it is missing, a link, or holds no session."""
    try:
        data, st = read_file_stat(path)
    except OSError as exc:
        raise Unreadable(f"{path.name} cannot be opened: {exc.strerror}") from None
    except LineTooLong as exc:
        raise Unreadable(f"{path.name}: {exc.reason}") from None
    if harness == "claude-code":
        transcript = read_transcript(data, path.name)
        session, cwd, error = transcript.session_id, transcript.cwd, transcript.error
        fork_turn = transcript.fork_turn
    else:
        # A thread a revert rotated to this rollout is reviewed with its history (decision 0366).
        data = codex_history(path, data)[0]
        rollout = read_rollout(data)
        session, cwd, error = rollout.session_id or "", rollout.cwd, rollout.error
        fork_turn = rollout.fork_turn
    if error is not None:
        raise Unreadable(error)
    return HarnessFile(
        harness=harness,
        path=path,
        data=data,
        digest=content_digest(data),
        session_id=session,
        cwd=cwd,
        lines=data.count(b"\n"),
        live=recently_changed(st, time.time_ns(), idle_seconds),  # a future mtime is not (0441)
        revision=stat_revision(st),
        changed_ns=st.st_mtime_ns,
        fork_turn=fork_turn or 0,
    )
