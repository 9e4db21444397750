"""The consolidation wire types: a review's receipt (its status, source, target, changes and
attempts), the evidence ranges it cites, and what `consolidation/run` answers."""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .sessions import SessionFormat


class Status(str, Enum):
    PREPARED = "prepared"
    RUNNING = "running"
    PROPOSED = "proposed"
    COMMITTING = "committing"
    COMMITTED = "committed"
    NO_CHANGE = "no-change"
    CANCELLED = "cancelled"
    SOURCE_CHANGED = "source-changed"
    TARGET_CONFLICT = "target-conflict"
    INVALID_PROPOSAL = "invalid-proposal"
    PROVIDER_FAILED = "provider-failed"
    EVIDENCE_TOO_LARGE = "evidence-too-large"
    INTERNAL_ERROR = "internal-error"


class EvidenceRange(BaseModel):
    """A turn's `turn/start`…`turn/end` seqs, as shown to the model and cited back by it."""

    # frozen: hashable, since proposals are checked against a set of them
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    fromSeq: int = Field(ge=0)
    toSeq: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> EvidenceRange:
        if self.toSeq < self.fromSeq:
            raise ValueError("toSeq must not be before fromSeq")
        return self


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Source(_Model):
    session: str
    digest: str
    coveredSeq: int
    # The evidence as the model reads it, hashed: a review of other content with the same
    # evidence (a renamed session) has nothing new to learn. None in receipts older than it.
    evidence: str | None = None
    # What `coveredSeq` and the evidence ranges count: DSH events, or a Claude Code or Codex
    # file's lines. None in receipts older than it (which said "events" for both).
    format: SessionFormat | None = None

    @property
    def unit(self) -> str:
        """What one of its seqs counts, for people: a harness file's line, else a DSH event."""
        return "line" if self.format in ("claude-code", "codex") else "event"


class ScopeRevisions(_Model):
    before: str
    planned: str | None = None
    after: str | None = None


class Target(_Model):
    workspace: str  # the workspace key
    workspaceRevisions: ScopeRevisions
    globalRevisions: ScopeRevisions


class ChangeSummary(_Model):
    action: Literal["replace-global", "put", "delete"]
    name: str | None = None
    type: str | None = None
    evidence: list[EvidenceRange]
    contentHash: str | None = None


class Attempt(_Model):
    number: int
    workerSession: str | None = None
    provider: str
    model: str
    status: Status
    startedAt: str
    endedAt: str | None = None
    error: str | None = None


class HistoryLink(_Model):
    """The memory history entries a review's commits made, and what they changed (names only)."""

    globalEntry: str | None = None
    workspaceEntry: str | None = None
    added: list[str] = []
    changed: list[str] = []
    removed: list[str] = []
    globalChanged: bool = False
    insertions: int = 0  # lines, over every file the review changed
    deletions: int = 0


class Receipt(_Model):
    review: str
    consolidator: int
    status: Status
    source: Source
    target: Target
    proposalHash: str | None = None
    changes: list[ChangeSummary] = []
    attempts: list[Attempt] = []
    createdAt: str
    completedAt: str | None = None
    # Set when the review committed something (a target-conflict after its Global commit too),
    # and the history could be written.
    history: HistoryLink | None = None
    # The earlier review whose evidence this one's equals: it ended no-change without a model.
    repeats: str | None = None

    @property
    def attempt(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None


class ConsolidationResult(BaseModel):
    """What `remem consolidate --json` prints."""

    review: str
    status: Status
    attempt: int
    changes: int
    recovered: bool
    repeats: str | None = None  # `Receipt.repeats`
    # Why a failed review failed, as its last attempt's `error` says: a script reading `--json`
    # gets the reason the text output prints. Not named `error`: that is a refusal's object.
    reason: str | None = None
