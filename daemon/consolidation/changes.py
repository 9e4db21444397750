"""A review as a person reads it: its phases while it runs ("Waiting for the model"), and its
changes ("Added prefer-uv (feedback) ← turn 2").

The language server's progress, receipt view and outcome message and the CLI's `consolidate`
and `receipts` say a review in these same words: each phase the daemon announces, and for a
change the verb from the review's history entry, the record and its type, and the turns its
evidence lies in.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from ..home import Home
from ..memory.record import GLOBAL_FILE
from ..memory.revision import empty_revision
from ..protocol.consolidation import EvidenceRange, Receipt
from ..protocol.rpc import TurnRow

Verb = Literal["Added", "Changed", "Removed", "Rewrote"]

# What is happening from each phase on (docs/consolidation.md): the daemon announces a phase
# as it begins.
PHASE_WORDS = {
    "freezing": "Reading the session and the memory it is reviewed against",
    "waiting": "Waiting for another consolidation of this session or its workspace to end",
    "model": "Preparing the request to the model",
    "model-step": "Waiting for the model",
    "model-answer": "Checking the proposal",
    "committing": "Committing to memory",
}


class ChangedRecord(BaseModel):
    """One change of a review, as a person names it: "Added run-ci-before-push (feedback)"."""

    verb: Verb
    name: str  # a record's name, or GLOBAL.md
    type: str | None
    path: str | None  # the record's file, for a change that left one to open

    def text(self) -> str:
        return f"{self.verb} {self.name}{f' ({self.type})' if self.type else ''}"


def changed_records(home: Home, receipt: Receipt) -> list[ChangedRecord]:
    """Each change of `receipt`, a put named Added or Changed as its history entry says, Global
    Added when it was empty before the review, else Rewrote."""
    link = receipt.history
    records = []
    for change in receipt.changes:
        name, kind = change.name or "", change.type
        if change.action == "replace-global":
            # As `memory log` names it: a Global that held nothing is added, not rewritten.
            empty = receipt.target.globalRevisions.before == empty_revision(None)
            path = str(home.global_file)
            records.append(
                ChangedRecord(verb="Added" if empty else "Rewrote", name=GLOBAL_FILE, type=None, path=path)
            )
        elif change.action == "delete":
            records.append(ChangedRecord(verb="Removed", name=name, type=kind, path=None))
        else:
            verb: Verb = "Changed" if link is not None and name in link.changed else "Added"
            path = str(home.workspaces / receipt.target.workspace / f"{name}.md")
            records.append(ChangedRecord(verb=verb, name=name, type=kind, path=path))
    return records


def turns_of(rows: list[TurnRow], evidence: list[EvidenceRange]) -> list[int]:
    """The turns the evidence lies in."""
    numbers = set()
    for row in rows:
        end = row.endSeq if row.endSeq is not None else row.startSeq
        if any(r.fromSeq <= end and row.startSeq <= r.toSeq for r in evidence):
            numbers.add(row.turn)
    return sorted(numbers)


def turn_spans(numbers: list[int]) -> str:
    """`1–3, 5` for [1, 2, 3, 5]."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{run[0]}–{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs)
