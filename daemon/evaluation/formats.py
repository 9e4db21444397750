"""Session formats the evaluation set is generated in: each writes a case's turns as its own logs.

A format turns scripted turns into a session log in a root that remem reads, and reports the
evidence range of each scripted turn (the grading key counts scripted turns; a padded session
numbers its own turns differently). DSH is written as a scripted session through the writer;
another format (Claude Code, Codex) adds a `SessionFormat` here once remem reads it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..consolidation.evidence import project_evidence
from ..protocol.consolidation import EvidenceRange
from ..sessions.reader import read_session
from ..sessions.scripted import ScriptedTurn, build_scripted_session, write_session

FINISHED_MTIME = 1_600_000_000  # long past: the catalog must see the session as finished, not live


@dataclass(frozen=True)
class Written:
    """A generated session: its id, and the evidence range of each scripted turn (1-based)."""

    session_id: str
    ranges: dict[int, EvidenceRange]
    size: int  # bytes of the rendered evidence, what the padding is measured by
    events: int  # events the reader counted, which SESSION_EVENTS_MAX bounds


class SessionFormat(Protocol):
    name: str

    def write(self, root: Path, turns: Sequence[ScriptedTurn], scripted: Sequence[int], seed: int) -> Written:
        """Write `turns` as one finished session under `root`; `scripted[i]` is the scripted
        number of `turns[i]` (0 for padding)."""
        ...


class DshFormat:
    """DSH logs, as remem's scripted sessions write them."""

    name = "dsh"

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd

    def write(self, root: Path, turns: Sequence[ScriptedTurn], scripted: Sequence[int], seed: int) -> Written:
        draft = build_scripted_session(turns, seed=seed, cwd=self.cwd)
        path = write_session(root, draft)
        os.utime(path, (FINISHED_MTIME, FINISHED_MTIME))
        log = read_session(path)  # raises SessionLogError past one of the reader's caps
        evidence = project_evidence(log)
        by_turn = {t.turn: t.range for t in evidence.turns}
        ranges = {n: by_turn[i + 1] for i, n in enumerate(scripted) if n and i + 1 in by_turn}
        return Written(draft.header.id, ranges, len(evidence.render().encode("utf-8")), len(log.events))


FormatFactory = Callable[[str], SessionFormat]
FORMATS: dict[str, FormatFactory] = {"dsh": DshFormat}


def case_id(format_name: str, case_name: str) -> str:
    """A case written in a format, as `--cases`, the progress bar and the report name it."""
    return f"{format_name}/{case_name}"
