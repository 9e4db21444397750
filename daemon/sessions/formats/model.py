"""The shared vocabulary of the format readers: turns, tool calls, line problems, lineage edges.

Records are addressed by their **line number** in the file (1-based): both harnesses only
append, so a line number names the same record for as long as the file exists, and the host
can check it by reading that line back.

The values are frozen msgspec structs, not dataclasses: a listing builds a turn and its tool
calls for every turn of every file it reads, and a struct is built in C, about a third of a
frozen dataclass's cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import msgspec

Harness = Literal["claude-code", "codex"]
RefusalCode = Literal["no-conversation", "no-such-turn", "open-turn"]
TurnStatus = Literal["completed", "open", "aborted", "error", "rolled-back"]
EdgeKind = Literal["fork", "history", "subagent"]
# The largest number read from a harness file and kept (an ordinal): what a JSON client holds
# exactly, and far inside what the index stores; a file's larger number is a problem of its own.
SAFE_INTEGER_MAX = 2**53 - 1


class Problem(msgspec.Struct, frozen=True):
    """One defect of a file, at a line (0 when it concerns the whole file). Past the first
    `KEPT_PER_CODE` problems of a code in a read, the last one kept stands for the later ones
    too (`count`), so a file of a million broken lines costs a few problems, not a million."""

    line: int
    code: str  # stable, for tests and flags: "torn-tail", "not-json", "bad-record", ...
    reason: str  # what a user reads: of this line
    count: int = 1  # the lines it stands for: itself, and the later ones of its code not kept


KEPT_PER_CODE = 50  # as many as a transcript lists (`harness_transcript.PROBLEMS_SHOWN`)


class ProblemSink:
    """Adds a read's problems to `into`, bounded: the first `KEPT_PER_CODE` of each code (the
    ones `into` holds already included) whole, and the later ones only counted, on the last
    kept one (`Problem.count`). `wants` says whether a problem would be kept, so that the
    reason of one that is only counted is never written. `close` writes the counts."""

    def __init__(self, into: list[Problem]) -> None:
        self.into = into
        self._kept: dict[str, int] = {}  # code -> its problems in `into`
        self._last: dict[str, int] = {}  # code -> where its last one stands in `into`
        self._more: dict[str, int] = {}  # code -> problems counted on its last one, not yet written
        for at, problem in enumerate(into):
            self._kept[problem.code] = self._kept.get(problem.code, 0) + 1
            self._last[problem.code] = at

    def wants(self, code: str) -> bool:
        return self._kept.get(code, 0) < KEPT_PER_CODE

    def add(self, line: int, code: str, reason: str) -> None:
        if self.wants(code):
            self._kept[code] = self._kept.get(code, 0) + 1
            self._last[code] = len(self.into)
            self.into.append(Problem(line, code, reason))
        else:
            self.count(code)

    def count(self, code: str) -> None:
        """One more problem of `code`, past the kept ones."""
        self._more[code] = self._more.get(code, 0) + 1

    def close(self) -> None:
        for code, more in self._more.items():
            at = self._last[code]
            self.into[at] = msgspec.structs.replace(self.into[at], count=self.into[at].count + more)
        self._more.clear()


def problem_counts(problems: Iterable[Problem]) -> dict[str, int]:
    """How many lines have each kind of defect (`not-json`, `cycle`, `torn-tail`, ...)."""
    counts: dict[str, int] = {}
    for problem in problems:
        counts[problem.code] = counts.get(problem.code, 0) + problem.count
    return counts


def refused_lines(problems: Sequence[Problem], *, first: bool = True) -> str:
    """What a file's problems say of its refused lines, for the error of a file whose lines
    make no session: how many, of which kinds, and (`first`) the first one's reason, e.g.
    "38 lines refused (not-utf8 ×1, not-json ×37; line 1 is not UTF-8 text (byte 0))"."""
    counts = problem_counts(problems)
    total = sum(counts.values())
    kinds = ", ".join(f"{code} ×{count}" for code, count in counts.items())
    earliest = min(problems, key=lambda problem: problem.line).reason if first and problems else ""
    return f"{total} line{'' if total == 1 else 's'} refused ({kinds}{'; ' if earliest else ''}{earliest})"


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
    # The turn was stopped before the model finished (Claude Code's `--max-turns` note, or a
    # kill once its tools had run past its text): ended, so `completed`, but its text is no
    # final answer.
    cut_short: bool = False


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
