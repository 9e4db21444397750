"""The shared vocabulary of the format readers: turns, tool calls, line problems, lineage edges.

Records are addressed by their **line number** in the file (1-based): both harnesses only
append, so a line number names the same record for as long as the file exists, and the host
can check it by reading that line back.

The values are frozen msgspec structs, not dataclasses: a listing builds a turn and its tool
calls for every turn of every file it reads, and a struct is built in C, about a third of a
frozen dataclass's cost.
"""

from __future__ import annotations

from typing import Literal

import msgspec

Harness = Literal["claude-code", "codex"]
RefusalCode = Literal["no-conversation", "no-such-turn", "open-turn"]
TurnStatus = Literal["completed", "open", "aborted", "error", "rolled-back"]
EdgeKind = Literal["fork", "history", "subagent"]


class Problem(msgspec.Struct, frozen=True):
    """One defect of a file, at a line (0 when it concerns the whole file)."""

    line: int
    code: str  # stable, for tests and flags: "torn-tail", "not-json", "bad-record", ...
    reason: str  # what a user reads


class ToolCall(msgspec.Struct, frozen=True):
    """A tool the model called in a turn and whether it went well (None: no result, or unknown)."""

    name: str
    call_id: str
    ok: bool | None


class Turn(msgspec.Struct, frozen=True):
    """A real user prompt and everything up to the next one.

    `start` is the turn's first line and `end` its last: the cut of a fork after this turn
    (Claude Code: the prompt and the last assistant text; Codex: ``task_started`` and
    ``task_complete``). `key` is the harness's own id for the turn: in Claude Code the uuid of
    the `end` record (what ``--resume-session-at`` takes), in Codex the turn id."""

    index: int  # 1-based, in conversation order
    prompt: str  # the label: the prompt's first line, shortened
    start: int
    end: int
    key: str
    status: TurnStatus
    forkable: bool
    answer: str | None
    tools: tuple[ToolCall, ...]
    compacted: bool = False  # a compaction summary stands in for earlier context within this turn
    text: str = ""  # the prompt whole, as the transcript shows it


class TurnText(msgspec.Struct, frozen=True):
    """A turn as its model still sees it, for consolidation evidence: the user's prompts
    (context the harness injects left out), the compaction summaries it carries and its last
    assistant text. What a compaction in the turn replaced is left out (summarised)."""

    turn: Turn
    prompts: tuple[str, ...]
    summaries: tuple[str, ...]
    answer: str | None


class Edge(msgspec.Struct, frozen=True):
    """A lineage link from this session to `parent` (a session id)."""

    kind: EdgeKind
    parent: str
    upto: int | None = None  # Codex paginated history: the parent's ordinals [0, upto) are inherited


class NotAForkPoint(Exception):
    """A fork after this turn of this file cannot be made; `code` says why, for callers' error codes."""

    def __init__(self, code: RefusalCode, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
