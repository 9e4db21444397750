"""The sessions wire types: a listing's rows, a tree's nodes, a session's display metadata and
its turns, as `sessions/*` answers them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# The session formats remem reads; named here once, where a root may name its own.
SessionFormat = Literal["dsh", "claude-code", "codex"]
OPEN = "open"
ROLLED_BACK = "rolled-back"  # a Codex turn `thread_rolled_back` abandoned: nothing to branch from


# A branch is a path inside one file that was left for another (Claude Code: rewind, edit).
NodeKind = Literal["root", "fork", "subagent", "branch"]
# inferred: the tree's parent is deduced, not the one recorded (a Claude Code --fork-session copy,
# which records none, or a copy of a fork, which keeps the fork's).
# inline: a subagent written inside its parent's file (Claude Code 1.0), shown in its transcript.
NodeFlag = Literal["orphan", "cycle", "duplicate", "inferred", "inline"]


# Why a review is `interrupted`, as the CLI says it. Not only a kill: a run whose write the disk
# refused (its worker session, its receipt's end) leaves the receipt under way for the next run
# to close, and lets its lock go as it ends.
INTERRUPTED_WHY = "its process was killed or could not record its end"


class ReviewState(BaseModel):
    """Whether a session's current content was consolidated (filled in from the receipts);
    `unknown` when the receipts could not be read (the listing's `reviews` error says why);
    `interrupted` when its receipt says under way but no run holds the review
    (`INTERRUPTED_WHY`: run it again)."""

    model_config = ConfigDict(frozen=True)

    state: Literal[
        "never", "consolidated", "no-change", "failed", "pending", "interrupted", "changed", "unknown"
    ] = "never"
    status: str | None = None  # the receipt's status, for failed, pending and interrupted reviews


NEVER_REVIEWED = ReviewState()
REVIEW_UNKNOWN = ReviewState(state="unknown")


class SessionNode(BaseModel):
    """What every tree node says about its session (field order is the JSON key order)."""

    model_config = ConfigDict(frozen=True)

    id: str
    title: str | None
    kind: NodeKind
    forkTurn: int | None
    createdAt: int
    live: bool
    archived: bool
    flags: list[NodeFlag]
    review: ReviewState = NEVER_REVIEWED
    format: SessionFormat = "dsh"
    problems: int = 0  # lines of its file a reader skipped or flagged; `sessions show` lists them
    # A fork titled as forking titles it (its parent's title then, perhaps with " (N)"), not by a
    # person: what tells it from its siblings is its own first prompt, not this title.
    defaultTitle: bool = False


class FlatNode(SessionNode):
    """A tree node without children, placed by `parent` and `depth` in pre-order."""

    parent: str | None
    depth: int


class SessionSummary(BaseModel):
    """One row of `remem sessions list --json`."""

    id: str
    title: str | None
    cwd: str | None
    createdAt: int
    parent: str | None
    kind: Literal["root", "fork", "subagent"]
    live: bool
    turns: int
    lastSeq: int
    revision: str
    # The content digest reviews are bound to; a Claude Code or Codex file's is null until a
    # review needs it (hashing every file cost a listing a fifth of its time: decision 0340).
    digest: str | None
    review: ReviewState = NEVER_REVIEWED
    format: SessionFormat = "dsh"  # the harness that wrote it: its transcript's and fork's format
    # Lines a Claude Code or Codex reader skipped or flagged (bad lines, cycles, a torn last line
    # once the session is no longer live); `sessions show` lists them. A DSH defect is an error.
    problems: int = 0


class ListError(BaseModel):
    """What a listing could not read: a session's file or a folder of sessions (`sessions`); the
    review receipts' folder or a receipt file (`reviews`), which leaves every session read, its
    review state unknown; remem's file of titles and archive states (`metadata`), which leaves
    every session read, shown with the title and archive state its log gives it."""

    path: str
    message: str
    kind: Literal["sessions", "reviews", "metadata"] = "sessions"


def unread_sessions(errors: Sequence[ListError]) -> list[ListError]:
    """The errors of a listing that left sessions unread: not the review receipts' nor remem's
    titles' (`kind` `reviews`, `metadata`)."""
    return [error for error in errors if error.kind == "sessions"]


def no_problems(problems: list[str]) -> bool:
    """Whether a session answer leaves its `settingsProblems` out: the problems of an invalid
    `settings.yml`, each with its key and line, that a daemon answering on its last valid
    settings meanwhile says (decision 0363). None: the answer reads as it did before."""
    return not problems


class Listing(BaseModel):
    sessions: list[SessionSummary]
    errors: list[ListError]
    settingsProblems: list[str] = Field(default_factory=list, exclude_if=no_problems)


class SessionMeta(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str | None = None
    archived: bool | None = None  # None: not set in remem, DSH's archive list decides
    generation: int = 0


@dataclass(slots=True)
class TurnSummary:
    """One turn: `status` is its `turn/end` reason kind, or `open` while it has no end.

    A slotted dataclass, not a pydantic model: a listing's fold creates one per turn and sets
    its end, which pydantic makes three to seven times dearer (a tenth of projecting a long
    log). Pydantic still validates it where a stored projection is loaded.
    """

    turn: int
    startSeq: int
    endSeq: int | None = None
    status: str = OPEN
    user: str = ""

    @property
    def forkable(self) -> bool:
        # DSH's Host fork anchors at any turn/end, whatever its reason (an aborted turn is a
        # completed prefix); only a turn still open (or rolled back) cannot be branched from.
        return self.status not in (OPEN, ROLLED_BACK)
