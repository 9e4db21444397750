"""Reading one Codex rollout (``sessions/YYYY/MM/DD/rollout-<ts>-<thread>.jsonl``).

Each line is ``{"timestamp", "type", "payload"}``. The rules, checked against Codex itself and
codex-rs:

- identity, cwd and lineage come from the ``session_meta`` on line 1 only: a legacy fork
  copies its parent's lines, ``session_meta`` included, after its own, so a later one is never
  the rollout's; a rollout whose line 1 is not its ``session_meta`` (damaged, torn while Codex
  writes it, or another record) is an error naming that line;
- lineage edges: ``forked_from_id`` (a fork), ``history_base.thread_id`` (paginated history:
  the parent's ordinals before ``end_ordinal_exclusive`` are inherited, not copied) and
  ``source.subagent.thread_spawn.parent_thread_id`` (a sub-agent);
- turns run from ``task_started`` to ``task_complete`` (completed, or error when it carries
  one) or ``turn_aborted`` (aborted); a rollout without those events is cut at each user
  message instead;
  ``thread_rolled_back`` abandons its ``num_turns`` latest surviving turns that carry a user
  message, and every turn after the earliest of them (a shell command's or a compaction's turn
  has none: Codex does not count it);
- the prompt is the user's text: context Codex injects as user messages
  (``<environment_context>``, AGENTS.md, permissions, skills, a subagent's notification) is
  not, whatever its case, as Codex matches it;
- a turn is forkable when it has ended and every tool call in it has its output;
- a turn with no prompt that compacted the conversation (``thread/compact/start``, ``/compact``)
  is labelled ``/compact``, as a Claude Code compaction turn reads;
- a thread Codex reverted (``thread/revert``, 0.163) keeps its id and goes on in a new rollout,
  ``rollout-<ts>-<thread>_<rollout>.jsonl``, whose ``session_meta`` names in ``history_base``
  the rollout (by its rollout id; the first one's is the thread id) and ordinal it continues
  from: `thread_history` joins the lines it inherits and its own into one history (decision
  0366), a forked thread's too (decision 0400);
- an ordinal is the number Codex writes on a line (its record's ``ordinal``), not a line count:
  a remem fork keeps lines Codex does not number, or numbered by the parent (`ordinal_cut`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeGuard

import msgspec

from ..lineage import shortened
from .jsonl import MAX_LINE, Fields, Line, end_of_line, records, utf8_error
from .model import (
    SAFE_INTEGER_MAX,
    Edge,
    NotAForkPoint,
    Problem,
    ToolCall,
    Turn,
    TurnStatus,
    TurnText,
    problem_counts,
    refused_lines,
)

# What a user message Codex injects begins with. codex-rs's own list (`CONTEXTUAL_USER_FRAGMENTS`:
# AGENTS.md, environment context, skill, user shell command, turn aborted, subagents, plugins,
# subagent notification) is matched, as Codex matches it, after leading whitespace and in any
# case; a message any of whose text items is one is not the user's (`_injected`).
INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<skills_instructions>",
    "<apps_instructions>",
    "<collaboration_mode>",
    "<turn_aborted>",
    "<user_shell_command>",
    "<skill>",
    "<subagents>",
    "<plugins>",
    "<subagent_notification>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
)
_INJECTED = tuple(prefix.lower() for prefix in INJECTED_PREFIXES)
_INJECTED_CHARS = max(map(len, INJECTED_PREFIXES))
CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
PROMPT_CHARS = 200
# What Codex's IDE extension and desktop app put between the context they attach and the
# user's own request (codex-rs's `USER_MESSAGE_BEGIN`).
_REQUEST_MARKER = "## My request for Codex:"
# How the IDE extension's context begins (open tabs, the active file, its selection); a text
# item that is this context alone, with no request after it, is none of the user's words.
_IDE_CONTEXT = "# Context from my IDE setup:"
ENDED = frozenset({"completed", "error", "aborted"})
COMPACT_LABEL = "/compact"  # a compaction turn's label, the command Codex and Claude Code run it by


class _Item(Fields):
    type: Any = None
    id: Any = None
    exit_code: Any = None
    status: Any = None  # a finished item's: "completed", "failed" or "declined"


# A finished item's status, where it has no exit code (a subagent's, an MCP tool's call).
_ITEM_OUTCOMES = {"completed": True, "failed": False, "declined": False}
# What Codex answers a call it could not run with (codex-rs's tool router), as the call's
# output text: the rollout keeps no other sign that the call failed.
_UNRUN = tuple(
    msgspec.json.encode(prefix)[:-1]
    for prefix in (
        "unsupported call: ",
        "unsupported custom tool call: ",
        "failed to parse function arguments: ",
    )
)


class _Text(msgspec.Struct):
    """An item of a message's content: only its kind and text are read (UNSET: no text key)."""

    type: Any = None
    text: Any = msgspec.UNSET


# Any JSON value, with the objects the reader looks into decoded as structs (a content item's
# kind and text, a kept history item's kind, role and content) and nothing else of them built;
# every other shape still decodes, as it did when these fields were `Any`.
_Scalar = str | int | float | bool | None
_Content = list[_Text | _Scalar | list[Any]] | dict[str, Any] | _Scalar


class _Kept(Fields):
    """An item of a compaction's kept history: only its kind, role and content are read."""

    type: Any = None
    role: Any = None
    content: _Content = None


_History = list[_Kept | _Scalar | list[Any]] | dict[str, Any] | _Scalar


class _Payload(Fields):
    # A line's kind (a response item's, an event's): text, or the line is a `bad-record`, as a
    # record's own type is; an array or an object there is no kind the rules can look up.
    type: str | None = None
    turn_id: Any = None
    message: Any = None
    role: Any = None
    content: _Content = None
    call_id: Any = None
    id: Any = None
    name: Any = None
    exit_code: Any = None
    item: _Item | None = None
    error: Any = None
    num_turns: Any = None
    # session_meta
    cwd: Any = None
    timestamp: Any = None
    cli_version: Any = None
    originator: Any = None
    source: Any = None
    forked_from_id: Any = None
    history_base: Any = None
    model_provider: Any = None
    git: Any = None  # the repository a session ran in: its commit, branch and URL
    # compacted
    replacement_history: _History = None
    # patch_apply_end
    success: Any = None
    # function_call_output: kept undecoded, only its start is looked at
    output: msgspec.Raw = msgspec.Raw()


class _Line(msgspec.Struct):
    type: str = ""
    timestamp: str | None = None
    payload: _Payload = msgspec.field(default_factory=_Payload)


LISTED_LINE: type[msgspec.Struct] = _Line  # what a listing decodes each line into (the benchmarks' floor)


class _EventType(msgspec.Struct):
    type: str | None = None  # as `_Payload.type`: a line with another is no event


class _Event(msgspec.Struct):
    """Just enough of a line to confirm it is an event of some type."""

    type: str = ""
    payload: _EventType | None = None


_EVENT = msgspec.json.Decoder(_Event).decode
_EVENTS = msgspec.json.Decoder(list[_Event]).decode


@dataclass(frozen=True)
class Rollout:
    """What one Codex file says; `error` is set when it has no usable ``session_meta``."""

    session_id: str | None
    cwd: str | None
    title: str | None
    created_at: str | None
    updated_at: str | None
    cli_version: str | None
    originator: str | None
    source: str | None  # "cli", "exec", "vscode", "subagent", ...
    model_provider: str | None
    lineage: tuple[Edge, ...]
    fork_turn: int | None  # a fork's turns copied from its parent (None: not a fork, or none copied)
    turns: tuple[Turn, ...]  # rolled-back turns included, with that status; () when only counted
    turn_count: int
    compactions: int
    meta_line: int  # 1: the session_meta on line 1 the rollout is identified by (0: none)
    problems: tuple[Problem, ...]
    error: str | None = None
    newlines: int = 0  # the file's newline characters: its lines, less an unended last one


class _Open(msgspec.Struct):
    """A turn being read."""

    start: int
    key: str
    prompt: str | None = None
    end: int = 0
    answer: str | None = None
    calls: dict[str, str] = msgspec.field(default_factory=dict)
    outputs: dict[str, bool | None] = msgspec.field(default_factory=dict)  # None: no outcome told
    late: dict[str, bool] = msgspec.field(default_factory=dict)  # outcomes told after the turn ended
    compacted: bool = False
    status: TurnStatus = "open"
    prompts: list[str] = msgspec.field(default_factory=list)  # from the model's input items
    said: list[str] = msgspec.field(default_factory=list)  # from user_message events (some rollouts only)
    summaries: list[str] = msgspec.field(default_factory=list)
    last_said: str | None = None  # the last assistant text since a compaction in the turn
    asked: bool = False  # a user message came in it: a rollback counts it (a shell command's turn has none)
    since: int = 0  # the line of the latest compaction its evidence follows (before it or in it; 0: none)
    calls_since: int = 0  # how many of `calls` were made before that compaction


_FIRST_LINE = msgspec.json.Decoder(_Line).decode
_CWD = msgspec.json.Decoder(str).decode
# Codex writes a rollout's first line with the session_meta's string fields (id, fork, time)
# before its cwd, and the model's base instructions (tens of KB) after: a glance reads the cwd
# off the line's start, so it neither reads nor decodes the rest. The start is matched as JSON
# would have it (string values only, any spacing); any other shape is decoded whole.
_WS = rb"[ \t\r\n]*"
_STRING = rb'"[^"\\\x00-\x1f]*(?:\\.[^"\\\x00-\x1f]*)*"'  # unrolled: one alternation a char is slow
_PAIRS = (
    rb"(?:" + _WS + _STRING + _WS + rb":" + _WS + _STRING + _WS + rb",)*?" + _WS
)  # lazy: the key wanted is tried first
_META_START = re.compile(
    _WS + rb"\{" + _PAIRS + rb'"type"' + _WS + rb":" + _WS + rb'"session_meta"' + _WS + rb","
    + _PAIRS + rb'"payload"' + _WS + rb":" + _WS + rb"\{" + _PAIRS + rb'"cwd"' + _WS + rb":" + _WS
    + rb"(" + _STRING + rb")"
)  # fmt: skip


def cwd_at_start(head: bytes) -> str | None:
    """The cwd a rollout's first line names at its start (`head`, any first part of the line),
    when the line opens with its `session_meta` laid out as Codex writes it; None otherwise."""
    found = _META_START.match(head)
    if found is None or not _utf8(head[: found.end()]):
        return None
    try:
        return _str(_CWD(found.group(1)))
    except msgspec.DecodeError:  # an escape JSON does not have
        return None


def first_line_cwd(line: bytes) -> str | None:
    """The cwd a rollout's first line names when that line is its `session_meta` (then the first,
    which is where identity and cwd come from): read off its start (`cwd_at_start`), else from
    the whole line decoded; None when the line cannot say (as the reader, which refuses a line
    that is not UTF-8 text, even in a field it skips)."""
    found = cwd_at_start(line)
    if found is not None:
        return found
    meta = _first_meta(line)
    return None if meta is None else _str(meta.get("cwd"))


def _first_meta(line: bytes) -> _Payload | None:
    if not _utf8(line):
        return None
    try:
        record = _FIRST_LINE(line)
    except msgspec.DecodeError:
        return None
    return record.payload if record.type == "session_meta" else None


def read_rollout(data: bytes) -> Rollout:
    """Read the rollout `data`, its turns built."""
    problems: list[Problem] = []
    read = records(data, _Line, problems)
    lines = read.lines
    events = _event_types(lines)
    tally = Tally(problems=problems)
    tally.fold(lines, events)
    built = tuple(_turn(index, turn) for index, turn in enumerate(_read(lines, events), start=1))
    starts = {turn.start for turn in built}
    stamps = [record.timestamp or "" for number, record in lines if number in starts]
    title = next((turn.prompt for turn in built if turn.text), None)
    return tally.rollout(built, len(built), title, stamps, read.newlines)


@dataclass(slots=True)
class Tally:
    """What a listing reads of a rollout's lines, kept to go on from after an append (decision
    0350): a rollout only grows by whole lines, and where task events number its turns nothing
    a listing shows of a line depends on the lines after it."""

    problems: list[Problem] = field(default_factory=list)
    size: int = 0  # the bytes tallied, through a newline
    lines: int = 0  # the lines in them
    meta: Line[_Line] | None = None  # the session_meta on line 1
    first: str | None = None  # the record type of line 1, once decoded (None: not, or not yet)
    later: int = 0  # without `meta`, the line of the first session_meta after line 1 (0: none)
    earliest: str | None = None
    latest: str | None = None
    started: int = 0  # task_started events
    # Each turn's start time while the rollout may be a fork (its meta unread, or naming a
    # parent): a fork's copied turns are those begun before its meta's time.
    start_stamps: list[str] | None = field(default_factory=list)
    inside: bool = False  # within a turn, its title still unread
    title: str | None = None
    compactions: int = 0

    def fold(self, lines: list[Line[_Line]], events: list[Any] | None = None) -> None:
        """Take `lines`, the ones after those tallied (`events`: their event types, if taken)."""
        if self.meta is None:
            if self.first is None and lines and lines[0].number == 1:
                self.first = lines[0].record.type
                if self.first == "session_meta":
                    self.meta = lines[0]
                    if not _forked_at(self.meta):
                        self.start_stamps = None
            if self.meta is None and not self.later:  # only to say where it is, in the error
                self.later = next((n for n, record in lines if record.type == "session_meta" and n > 1), 0)
        stamps = [record.timestamp for _, record in lines if record.timestamp]
        if stamps:
            low, high = min(stamps), max(stamps)
            self.earliest = low if self.earliest is None else min(self.earliest, low)
            self.latest = high if self.latest is None else max(self.latest, high)
        events = _event_types(lines) if events is None else events
        started = events.count("task_started")
        self.started += started
        if started and self.start_stamps is not None:
            self.start_stamps += [
                record.timestamp or ""
                for (_, record), event in zip(lines, events, strict=True)
                if event == "task_started"
            ]
        if self.title is None:
            self.title, self.inside = _first_prompt(lines, events, self.inside)
        self.compactions += sum(1 for _, record in lines if record.type == "compacted")

    def error(self) -> str | None:
        """Why the rollout has no identity: line 1 is not a `session_meta` with an id and a cwd."""
        meta = self.meta
        if meta is not None:
            return _unidentified(meta)
        damaged = self.problems[0] if self.problems and self.problems[0].line == 1 else None
        if damaged is not None and damaged.code == "torn-tail":  # Codex still writing it
            return f"no session_meta line yet: {damaged.reason}"
        # Every line refused tells more than line 1 alone: another encoding, or not a rollout.
        refused = sum(problem_counts(self.problems).values()) > (damaged is not None)
        more = f"; {refused_lines(self.problems, first=damaged is None)}" if refused else ""
        if damaged is not None:
            why = damaged.reason
        elif self.first is not None:
            why = f"line 1 is a {self.first!r} record" if self.first else "line 1 is a record of no type"
        elif self.later:
            why = "line 1 is empty"
        else:
            return "no session_meta line: not a Codex rollout, or its first line is damaged" + more
        said = f"no session_meta line opens the rollout ({why}){more}"
        if self.later:
            said += (
                f"; the first session_meta is on line {self.later}, and a later one is never the "
                "rollout's own (a fork copies its parent's after its own)"
            )
        return said

    def copy(self) -> Tally:
        stamps = None if self.start_stamps is None else list(self.start_stamps)
        return replace(self, problems=list(self.problems), start_stamps=stamps)

    def rollout(
        self, turns: tuple[Turn, ...], count: int, title: str | None, start_stamps: list[str], newlines: int
    ) -> Rollout:
        """The rollout these lines make, with `count` turns (`turns` when built) begun at the
        times of `start_stamps`, and `title`."""
        meta = self.meta
        payload = meta.record.payload if meta else _Payload()
        source = payload.get("source")
        forked_at = _forked_at(meta)
        lineage, wrong = _lineage(payload)
        return Rollout(
            session_id=_str(payload.get("id")),
            cwd=_str(payload.get("cwd")),
            title=title,
            created_at=_str(payload.get("timestamp")) or self.earliest,
            updated_at=self.latest,
            cli_version=_str(payload.get("cli_version")),
            originator=_str(payload.get("originator")),
            source=source
            if isinstance(source, str)
            else next(iter(source), None)
            if isinstance(source, dict)
            else None,
            model_provider=_str(payload.get("model_provider")),
            lineage=lineage,
            fork_turn=sum(1 for stamp in start_stamps if stamp < forked_at) or None if forked_at else None,
            turns=turns,
            turn_count=count,
            compactions=self.compactions,
            meta_line=meta.number if meta else 0,
            problems=(*wrong, *self.problems),
            error=self.error(),
            newlines=newlines,
        )


MAX_TALLIED_PROBLEMS = 1000  # a tally holding more is not kept: a damaged file is read whole


def listed_rollout(data: bytes, kept: Tally | None = None) -> tuple[Rollout, Tally | None]:
    """What a listing shows of the rollout `data`: its turns counted and its title found, none
    built. Given `kept`, the tally of the rollout's first `kept.size` bytes, `data` is what was
    appended after them, and `kept` is folded on. Also the tally to go on from next time: of
    the whole lines, when task events number the turns (a rollout without them is read whole,
    turns built, since an appended prompt can change how its earlier lines divide)."""
    tally = Tally() if kept is None else kept
    cut = data.rfind(b"\n") + 1
    read = records(data if cut == len(data) else data[:cut], _Line, tally.problems, tally.lines + 1)
    tally.fold(read.lines)
    tally.size, tally.lines = tally.size + cut, tally.lines + read.newlines
    del read  # its lines, before a rollout without task events is read again whole
    last = tally
    if cut < len(data):  # a last line still being written: tallied apart, for it will grow
        last = tally.copy()
        last.fold(records(data[cut:], _Line, last.problems, tally.lines + 1).lines)
    if not last.started:  # never so for a kept tally: it has task events
        return read_rollout(data), None
    rollout = last.rollout((), last.started, last.title, last.start_stamps or [], tally.lines)
    keep = tally.started and len(tally.problems) <= MAX_TALLIED_PROBLEMS
    return rollout, tally if keep else None


# A JSON string token, never matched inside another string (there its quotes are escaped).
_STARTED = b'"task_started"'
_ENDED = (b'"task_complete"', b'"turn_aborted"')
_ROLLED_BACK = b'"thread_rolled_back"'


@dataclass(frozen=True)
class ForkPoint:
    """What a fork after `turn` copies: the rollout's identity and title, and `cut`, the byte
    offset just after the turn's last line."""

    rollout: Rollout
    turn: Turn
    cut: int


def fork_point(data: bytes, index: int) -> ForkPoint:
    """The fork point after turn `index` (1-based) of the rollout `data`.

    A fork of a large rollout must not cost a decode of every line: the task events are found
    by their bytes (confirmed by decoding their lines) and only the chosen turn and the first
    one with a prompt (the title) are read. A rollout that only a full read can number (no task
    events, a first line that is not its ``session_meta``) or a turn a later rollback may have
    abandoned is read whole. Raises `NotAForkPoint` when there is no session, no such turn, or
    the turn is not a fork point."""
    found = _scanned(data, index)
    if found is None:
        rollout = read_rollout(data)
        if rollout.error is not None:
            raise NotAForkPoint("no-conversation", rollout.error)
        _check_index(index, len(rollout.turns))
        turn = rollout.turns[index - 1]
        found = ForkPoint(rollout, turn, end_of_line(data, turn.end))
    if not found.turn.forkable:
        raise NotAForkPoint("open-turn", f"turn {index} is {found.turn.status}, not a fork point")
    return found


def _scanned(data: bytes, index: int) -> ForkPoint | None:
    identity = read_rollout(data[: _end_of_line_at(data, 0)])
    starts = _event_lines(data, (_STARTED,), 0, len(data))
    if not starts or identity.meta_line != 1:
        return None
    if identity.error is not None:
        raise NotAForkPoint("no-conversation", identity.error)
    _check_index(index, len(starts))
    if data.find(_ROLLED_BACK, starts[index - 1]) >= 0:  # one before the turn cannot reach it
        return None
    turn, cut = _turn_at(data, starts, index)
    turns = (_turn_at(data, starts, n)[0] for n in range(1, len(starts) + 1))
    title = next((other.prompt for other in turns if other.text), None)
    return ForkPoint(replace(identity, title=title, turns=(turn,)), turn, cut)


def turns_begun_before(data: bytes, ordinal: int) -> int:
    """How many turns of the rollout `data` begin before its ordinal `ordinal` (`ordinal_cut`):
    those a fork inheriting the ordinals before its `history_base.end_ordinal_exclusive` has of
    this parent. The task events are found by their bytes; a rollout without them is read up to
    there."""
    cut = ordinal_cut(data, ordinal)[0]
    cut = len(data) if cut is None else cut
    starts = _event_lines(data, (_STARTED,), 0, cut)
    return len(starts) if starts else read_rollout(data[:cut]).turn_count


class _Ordinal(msgspec.Struct):
    ordinal: Any = None


_ORDINAL = msgspec.json.Decoder(_Ordinal).decode
_ORDINAL_KEY = b'"ordinal"'
_SESSION_META = re.compile(rb'"type":\s*"session_meta"')
# How Codex opens a line it numbers: its time, then its ordinal (read without decoding the line).
_ORDINAL_AT_START = re.compile(rb'\{"timestamp":"[^"\\]*","ordinal":(0|[1-9][0-9]{0,15})[,}]')


def _line_ordinal(data: bytes, start: int, end: int) -> int | None:
    """The ordinal Codex numbered the line `data[start:end]` with (its record's ``ordinal``);
    None when it has none (a line remem or an older Codex wrote), or cannot be read."""
    found = _ORDINAL_AT_START.match(data, start, end)
    if found is not None:
        return int(found.group(1))
    if data.find(_ORDINAL_KEY, start, end) < 0:
        return None
    try:
        told = _ORDINAL(data[start:end]).ordinal
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return told if _ordinal(told) else None


def _numbered(data: bytes) -> bool:
    """Whether Codex numbered the lines of `data`. It numbers every line it writes, from its
    first: its first line after the `session_meta` lines a remem fork leads with (unnumbered,
    or numbered by the parent) says. Looking no further keeps an older rollout's cut costing
    the lines up to it, not the whole file."""
    start = 0
    while start < len(data):
        end = _end_of_line_at(data, start)
        if _line_ordinal(data, start, end) is not None:
            return True
        if _SESSION_META.search(data, start, end) is None:
            return False
        start = end
    return False


def ordinal_cut(data: bytes, upto: int, first: int = 0) -> tuple[int | None, int | None]:
    """Where ordinal `upto` begins in the lines `data` (a rollout, or the lines of one from its
    ordinal `first` on), as Codex counts a `history_base.end_ordinal_exclusive`: the byte offset
    of the first line numbered `upto` or more, and the last ordinal before it (None: none).
    Codex numbers each line it writes (its record's ``ordinal``) and counts those numbers, not
    lines: a remem fork's own ``session_meta`` and the parent's it keeps after it (decision 0079)
    are lines it does not number, or numbered by the parent. Lines no Codex numbered (an older
    rollout: its first line past any leading `session_meta` has none) are counted, from
    `first`, only as far as the cut.
    The offset is None when `data` ends before `upto`."""
    last: int | None = None
    start = 0
    numbered = _numbered(data)
    while numbered and start < len(data):
        end = _end_of_line_at(data, start)
        told = _line_ordinal(data, start, end)
        if told is not None and told >= upto:
            return start, last
        last = told if told is not None else last
        start = end
    if last is not None:
        return None, last
    # None numbered: each whole line is the next ordinal, counted only as far as the cut.
    need = max(upto - first, 0)
    cut = end_of_line(data, need)
    lines = data.count(b"\n", 0, cut)
    if lines < need:
        return None, first + lines - 1 if lines else None
    return cut, upto - 1 if upto > first else None


def _check_index(index: int, turns: int) -> None:
    if not 1 <= index <= turns:
        raise NotAForkPoint("no-such-turn", f"turn {index} does not exist: the rollout has {turns}")


def _turn_at(data: bytes, starts: list[int], index: int) -> tuple[Turn, int]:
    """Turn `index` read from its own lines (through its first end event, or up to the next
    turn) and the outcomes told after its end (up to the next turn), numbered as in the whole
    file, and the offset just after its last line."""
    begin = starts[index - 1]
    limit = starts[index] if index < len(starts) else len(data)
    end = next(iter(_event_lines(data, _ENDED, begin, limit)), None)
    stop = limit if end is None else _end_of_line_at(data, end)
    (turn,) = (_turn(1, read) for read in _read(records(data[begin:limit], _Line, []).lines))
    shift = data.count(b"\n", 0, begin)
    return msgspec.structs.replace(turn, index=index, start=turn.start + shift, end=turn.end + shift), stop


def _end_of_line_at(data: bytes, offset: int) -> int:
    newline = data.find(b"\n", offset)
    return len(data) if newline < 0 else newline + 1


def _event_lines(data: bytes, tokens: tuple[bytes, ...], begin: int, limit: int) -> list[int]:
    """Start offsets, in order, of the lines in [begin, limit) that are events of a type the
    `tokens` name. Every candidate line is decoded, all in one call."""
    wanted = {token.strip(b'"').decode() for token in tokens}
    found = sorted(at for token in tokens for at in _finds(data, token, begin, limit))
    spans: list[tuple[int, int]] = []
    for at in found:
        line = data.rfind(b"\n", 0, at) + 1
        if spans and spans[-1][0] == line:
            continue
        end = data.find(b"\n", at)
        spans.append((line, len(data) if end < 0 else end))
    # As the reader: a line over the cap, or not UTF-8 text (even in a field skipped), is none.
    candidates = [(line, end) for line, end in spans if end - line <= MAX_LINE and _utf8(data, line, end)]
    events: Sequence[_Event | None] = ()
    with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
        events = _EVENTS(b"[" + b",".join(data[line:end] for line, end in candidates) + b"]")
    if len(events) != len(candidates):  # some line is not one record (`1,2` is two): one by one
        events = [_event_or_none(data[line:end]) for line, end in candidates]
    return [
        line
        for (line, _), event in zip(candidates, events, strict=True)
        if event is not None
        and event.type == "event_msg"
        and event.payload is not None
        and event.payload.type in wanted
    ]


def _utf8(data: bytes, start: int = 0, end: int | None = None) -> bool:
    """Whether `data[start:end]` is UTF-8 text, as the reader requires of a line."""
    if start == 0 and end is None and data.isascii():
        return True
    return utf8_error(data, start, end) is None


def _event_or_none(raw: bytes) -> _Event | None:
    try:
        return _EVENT(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _finds(data: bytes, token: bytes, begin: int, limit: int) -> Iterator[int]:
    at = data.find(token, begin, limit)
    while at >= 0:
        yield at
        at = data.find(token, at + 1, limit)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _unidentified(meta: Line[_Line]) -> str | None:
    """Why the `session_meta` `meta` identifies no session: an id or a cwd it lacks, or gives as
    another value than text; None when it has both."""
    payload = meta.record.payload
    values = {key: payload.get(key) for key in ("id", "cwd")}
    missing = [key for key, value in values.items() if value is None or value == ""]
    said = [f"has no {' or '.join(missing)}"] if missing else []
    said += [
        f"has {'an' if key == 'id' else 'a'} {key} of the wrong type (expected a string, got "
        f"{_kind(value)}: {_shown(value)})"
        for key, value in values.items()
        if value is not None and not isinstance(value, str)
    ]
    return f"session_meta on line {meta.number} {' and '.join(said)}" if said else None


def _kind(value: Any) -> str:
    """What JSON calls the type of `value`, with its article."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "an array" if isinstance(value, list) else "an object" if isinstance(value, dict) else "a string"


def _lineage(meta: _Payload) -> tuple[tuple[Edge, ...], tuple[Problem, ...]]:
    """The lineage edges of a rollout whose line 1 is the `session_meta` `meta`, and the
    problem of a `history_base` that names no thread (no edge then) or an inherited ordinal
    that is no ordinal (the edge is then kept without it)."""
    edges: list[Edge] = []
    wrong: tuple[Problem, ...] = ()
    if forked := _str(meta.get("forked_from_id")):
        edges.append(Edge("fork", forked))
    base = meta.get("history_base")
    thread = _str(base.get("thread_id")) if isinstance(base, dict) else None
    if base is not None and thread is None:
        wrong = (Problem(1, "bad-value", _no_thread(base)),)
    elif thread is not None and isinstance(base, dict):
        upto = base.get("end_ordinal_exclusive")
        if upto is not None and not _ordinal(upto):
            wrong = (Problem(1, "bad-value", _NOT_AN_ORDINAL.format(shown=_shown(upto))),)
        edges.append(Edge("history", thread, upto if _ordinal(upto) else None))
    source = meta.get("source")
    subagent = source.get("subagent") if isinstance(source, dict) else None
    spawn = subagent.get("thread_spawn") if isinstance(subagent, dict) else None
    if isinstance(spawn, dict) and (parent := _str(spawn.get("parent_thread_id"))):
        edges.append(Edge("subagent", parent))
    return tuple(edges), wrong


def _no_thread(base: Any) -> str:
    """Why a `history_base` (not null) names no thread: the rollout's parent and the lines it
    inherits from it are then unknown, and no `history` edge is drawn."""
    if not isinstance(base, dict):
        what = f"history_base is {_shown(base)}, not an object naming the thread it continues"
    elif "thread_id" not in base:
        what = "history_base has no thread_id"
    else:
        what = f"history_base.thread_id is {_shown(base['thread_id'])}, not a thread id (a non-empty string)"
    return f"line 1: {what}: the thread it inherits lines from, and which lines, are not known"


_NOT_AN_ORDINAL = (
    "line 1: history_base.end_ordinal_exclusive is {shown}, not an ordinal (a whole number from 0 "
    f"to {SAFE_INTEGER_MAX}): the lines it inherits from its parent are not known"
)


def _ordinal(value: Any) -> TypeGuard[int]:
    """Whether `value`, a number a rollout gives, is an ordinal the index and the tree can hold."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= SAFE_INTEGER_MAX


def _shown(value: Any) -> str:
    """A value of a rollout, for a reason: short, whatever its size."""
    text = msgspec.json.encode(value).decode()
    return text if len(text) <= 40 else f"{text[:37]}..."


def _user_text(payload: _Payload | _Kept) -> str | None:
    """The user's text in a user ``message`` item, None for injected context: a message any of
    whose text items Codex injected is not the user's (as codex-rs parses a user message), and
    a text item that is the IDE extension's context alone is left out."""
    if payload.type != "message" or payload.role != "user":
        return None
    texts = _texts(payload.content, "input_text")
    if any(_injected(text) for text in texts):
        return None
    text = "\n".join(text for text in texts if not _ide_context_alone(text)).strip()
    return text or None


def _ide_context_alone(text: str) -> bool:
    """Whether a text item is the IDE extension's context with no request after it."""
    return text.lstrip().startswith(_IDE_CONTEXT) and _REQUEST_MARKER not in text


def _request(prompt: str) -> str:
    """The user's own words of `prompt`: the request alone when an editor or the desktop app put
    the context it attached before it (open tabs, the active file and its selection, mentioned
    files), as Claude Code's editor context is left out; "" when there is no request."""
    _, marker, request = prompt.partition(_REQUEST_MARKER)
    return request.strip() if marker else prompt


def _joined(content: _Content, kind: str) -> str:
    """The text of the `kind` items of a message's content."""
    return "\n".join(_texts(content, kind))


def _texts(content: _Content, kind: str) -> list[str]:
    """The text of each `kind` item of a message's content."""
    items = content if isinstance(content, list) else ()
    return [
        "" if item.text is msgspec.UNSET else str(item.text)
        for item in items
        if isinstance(item, _Text) and item.type == kind
    ]


def evidence_turns(data: bytes) -> tuple[TurnText, ...]:
    """The turns its model still sees, with their whole text: rolled-back turns and those that
    ended before the latest compaction (whose summary stands in for them) are left out. A turn
    a compaction stands in (in it, or just before it) starts at that ``compacted`` line, and its
    tools are those called after it; its prompts are the user's own words (`_request`)."""
    lines = records(data, _Line, []).lines
    compacted = max((line.number for line in lines if line.record.type == "compacted"), default=0)
    texts = []
    for index, turn in enumerate(_read(lines), start=1):
        if turn.status == "rolled-back" or turn.end < compacted:
            continue
        built = _turn(index, turn)
        if turn.since:
            built = msgspec.structs.replace(built, start=turn.since, tools=built.tools[turn.calls_since :])
        prompts = tuple(request for prompt in turn.prompts or turn.said if (request := _request(prompt)))
        texts.append(TurnText(built, prompts, tuple(turn.summaries), turn.last_said))
    return tuple(texts)


def _forked_at(meta: Line[_Line] | None) -> str | None:
    """When a fork was made: its own `session_meta` is stamped then, while the lines it copied
    keep their parent's times (None: not a fork)."""
    return meta.record.timestamp if meta and _str(meta.record.payload.get("forked_from_id")) else None


def _event_types(lines: list[Line[_Line]]) -> list[Any]:
    """Each line's event type (None: not an event), taken once: the rules ask about it often."""
    return [record.payload.type if record.type == "event_msg" else None for _, record in lines]


def _first_prompt(lines: list[Line[_Line]], events: list[Any], inside: bool) -> tuple[str | None, bool]:
    """The title `_read` gives a rollout with task events: the first prompt inside a turn (lines
    between a turn's end and the next `task_started` belong to none), as `_turn` shortens it;
    else None, and whether the last line is inside a turn (`inside`: the first is)."""
    for (_, record), event in zip(lines, events, strict=True):
        if event == "task_started":
            inside = True
        elif inside and (text := _prompt(record, event)) is not None:
            return _first_line(text), inside
        if event == "task_complete" or event == "turn_aborted":
            inside = False
    return None, inside


def _first_line(prompt: str) -> str:
    """The prompt as a title or a turn's label: its first line, of the request alone when an
    editor or the desktop app put the context it attached (open tabs, mentioned files) before
    it, as Codex titles its own threads."""
    request = prompt.partition(_REQUEST_MARKER)[2].strip()
    return shortened((request or prompt).splitlines()[0], PROMPT_CHARS)


def _read(lines: list[Line[_Line]], events: list[Any] | None = None) -> list[_Open]:
    events = _event_types(lines) if events is None else events
    explicit = "task_started" in events
    done: list[_Open] = []
    current: _Open | None = None
    compacted = False  # a compaction between turns belongs to the next one
    compacted_at = 0  # its line
    summaries: list[str] = []
    for (number, record), event in zip(lines, events, strict=True):
        payload = record.payload
        if current is None and record.type == "compacted":
            compacted, compacted_at = True, number
            summaries = _summary(payload)
        if event == "thread_rolled_back":
            _roll_back(done, payload.num_turns)
        if explicit and event == "task_started":
            _close(current, done)
            current = _Open(number, str(payload.turn_id or ""))
        elif not explicit and _prompt(record, event) is not None:
            _close(current, done)
            current = _Open(number, str(number))
        if current is None:
            if done and event in _EXITS:
                _late_exit(done[-1], payload, event)
            continue
        if compacted:
            current.since = compacted_at
        current.compacted, compacted = current.compacted or compacted, False
        if summaries:
            current.summaries += summaries
            summaries = []
        current.end = number
        _absorb(current, record, event, number)
        if event == "task_complete" or event == "turn_aborted":
            current.status = (
                "aborted" if event == "turn_aborted" else "error" if payload.error else "completed"
            )
            _close(current, done)
            current = None
    _close(current, done)
    if not explicit:
        for turn in done[:-1]:
            turn.status = "completed" if turn.status == "open" else turn.status
        if done and done[-1].answer is not None and done[-1].status == "open":
            done[-1].status = "completed"
    return done


def _prompt(record: _Line, event: Any) -> str | None:
    """The user's prompt a line carries (a ``user_message`` event or a user message item);
    `event` is its event type (None: not an event)."""
    if event == "user_message":
        message = record.payload.message
        text = message.strip() if isinstance(message, str) else ""
        return text if text and not _injected(text) else None
    return _user_text(record.payload) if record.type == "response_item" else None


def _injected(text: str) -> bool:
    """Whether `text` is context Codex injected (`INJECTED_PREFIXES`), as Codex tells it: after
    leading whitespace, in any case."""
    return text.lstrip()[:_INJECTED_CHARS].lower().startswith(_INJECTED)


def _absorb(turn: _Open, record: _Line, event: Any, number: int) -> None:
    payload = record.payload
    if record.type != "response_item":
        if record.type == "compacted":  # what came before is replaced by its summary
            turn.compacted = True
            turn.summaries = _summary(payload)
            turn.prompts, turn.said, turn.last_said = [], [], None
            turn.since, turn.calls_since = number, len(turn.calls)
        elif event == "user_message":
            message = payload.message
            # Codex counts a turn with a user message in a rollback, its text or not (an image).
            turn.asked = turn.asked or not (isinstance(message, str) and _injected(message))
            if (said := _prompt(record, event)) is not None:
                turn.prompt = turn.prompt or said
                turn.said.append(said)
        elif event in _EXITS and (finished := _exit(payload, event)) is not None:
            turn.outputs[finished[0]] = finished[1]
        return
    kind = payload.type
    if kind in CALLS:
        call = str(payload.call_id or payload.id)
        turn.calls[call] = str(payload.name or kind)
    elif kind in OUTPUTS:
        turn.outputs.setdefault(str(payload.call_id), False if _unrun(payload.output) else None)
    elif kind == "message" and payload.role == "assistant":
        said = _joined(payload.content, "output_text")
        if said.strip():
            turn.answer = turn.last_said = said
    elif (text := _user_text(payload)) is not None:
        turn.prompt = turn.prompt or text
        turn.prompts.append(text)
        turn.asked = True


def _summary(payload: _Payload) -> list[str]:
    """What a ``compacted`` line carries forward, as the model goes on to see it: the user's own
    messages it kept (verbatim, the last ones before it), then its summary (which Codex also
    keeps as a user message; empty when it compacted remotely)."""
    message = payload.get("message")
    summary = message.strip() if isinstance(message, str) else ""
    kept = payload.replacement_history
    items = kept if isinstance(kept, list) else ()
    texts = (_request(text) for item in items if isinstance(item, _Kept) and (text := _user_text(item)))
    joined = "\n\n".join(text for text in texts if text and text != summary)
    return [part for part in (joined, summary) if part]


_EXITS = frozenset({"exec_command_end", "patch_apply_end", "item_completed"})


def _exit(payload: _Payload, event: Any) -> tuple[str, bool] | None:
    """(call id, success) of a finished call: ``exec_command_end`` (legacy rollouts), an
    ``item_completed`` (paginated ones: a command's exit code, another item's status) or a
    ``patch_apply_end``."""
    if event == "exec_command_end" and isinstance(payload.exit_code, int):
        return str(payload.call_id), payload.exit_code == 0
    if event == "patch_apply_end" and isinstance(payload.success, bool):
        return str(payload.call_id), payload.success
    item = payload.item if event == "item_completed" else None
    if item is None or not item.id:
        return None
    if isinstance(item.exit_code, int):
        return str(item.id), item.exit_code == 0
    told = _ITEM_OUTCOMES.get(item.status) if isinstance(item.status, str) else None
    return None if told is None else (str(item.id), told)


def _unrun(output: msgspec.Raw) -> bool:
    """Whether a call's output is Codex's word that it could not run the call at all."""
    return bytes(memoryview(output)[:64]).startswith(_UNRUN)


def _late_exit(turn: _Open, payload: _Payload, event: Any) -> None:
    """An outcome told after its turn closed: Codex writes an interrupted command's
    ``item_completed`` (failed, exit -1) after the ``turn_aborted``. It tells how the call went,
    not that the call was answered: a call without its output stays without, so whether the
    turn can be forked is read from the turn's own lines, as a fork point reads it."""
    finished = _exit(payload, event)
    if finished is not None and finished[0] in turn.calls:
        turn.late[finished[0]] = finished[1]


def _outcome(turn: _Open, call: str) -> bool | None:
    """Whether `call` went well: as its end event told (in the turn, or after it); with only an
    output, a success, unless the user stopped the turn (an interrupted command's output is
    "aborted by user")."""
    told = turn.late.get(call, turn.outputs.get(call))
    if told is not None or call not in turn.outputs:
        return told
    return None if turn.status == "aborted" else True


def _close(turn: _Open | None, done: list[_Open]) -> None:
    """File `turn` (if any) as read."""
    if turn is not None:
        done.append(turn)


def _roll_back(done: list[_Open], count: Any) -> None:
    """Abandon the `count` latest surviving turns that carry a user message, and every turn
    after the earliest of them, as Codex cuts its history: it counts user turns, so a shell
    command's or a compaction's turn (no user message) after them is dropped with them and
    does not take one of the `count`."""
    remaining = count if isinstance(count, int) and count > 0 else 0
    for turn in reversed(done):
        if remaining == 0:
            break
        if turn.status != "rolled-back":
            turn.status, remaining = "rolled-back", remaining - turn.asked


def _turn(index: int, turn: _Open) -> Turn:
    dangling = any(call not in turn.outputs for call in turn.calls)
    label = COMPACT_LABEL if turn.compacted and not turn.asked and turn.since >= turn.start else ""
    return Turn(
        index=index,
        prompt=_first_line(turn.prompt) if turn.prompt else label,
        text=turn.prompt or "",
        start=turn.start,
        end=turn.end,
        key=turn.key,
        status=turn.status,
        forkable=turn.status in ENDED and not dangling,
        answer=turn.answer,
        tools=tuple(ToolCall(name, call, _outcome(turn, call)) for call, name in turn.calls.items()),
        compacted=turn.compacted,
    )


# A rollout's canonical name: `rollout-<local time>-<thread id>[_<rollout id>].jsonl`. The first
# rollout of a thread has no rollout id of its own (its rollout id is the thread id); each one
# Codex rotates the thread to on a revert has (codex-rs `thread_rollout_resolver.rs`).
_ROLLOUT_NAME = re.compile(
    r"rollout-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2})-([0-9a-fA-F-]{36})(?:_([0-9a-fA-F-]{36}))?\.jsonl"
)
MAX_SEGMENTS = 256  # rollouts of one thread followed back; each is one revert


@dataclass(frozen=True, order=True)
class RolloutName:
    """What a rollout's file name says: when it was made (local time, to the second), its
    thread and its rollout id (the thread's id for the thread's first rollout)."""

    stamp: str
    rollout: str
    thread: str

    @property
    def continues(self) -> bool:
        """Whether the name is of a rollout a thread was rotated to (not its first)."""
        return self.rollout != self.thread


def rollout_name(name: str) -> RolloutName | None:
    found = _ROLLOUT_NAME.fullmatch(name)
    if found is None:
        return None
    stamp, thread, rollout = found.groups()
    return RolloutName(stamp, (rollout or thread).lower(), thread.lower())


@dataclass(frozen=True)
class Continued:
    """Where a rollout that continues its own thread after a revert takes over: the thread's
    history is that of `rollout` (a rollout id) through its ordinals before `upto`, then this
    rollout's lines after its `session_meta`. `offset`: where `upto` falls in `rollout`'s file
    (`end_byte_offset`), when said."""

    rollout: str
    upto: int
    offset: int | None


def continued(data: bytes, name: str) -> Continued | None:
    """What the rollout `data`, named `name`, continues: a rollout named as one its thread was
    rotated to (`RolloutName.continues`) whose `session_meta`, line 1, is of that thread and has
    a `history_base`, a fork's too: Codex copies a forked thread's `forked_from_id` into each
    rollout it rotates the thread to (decision 0400). None for any other rollout, and when the
    `history_base` names the thread it was forked from: that is a fork boundary, another
    thread's, not a segment of its own (decision 0366)."""
    named = rollout_name(name)
    if named is None or not named.continues:
        return None
    first = data[: _end_of_line_at(data, 0)]
    if not _utf8(first):  # the reader refuses that line
        return None
    try:
        record = _FIRST_LINE(first)
    except msgspec.DecodeError:
        return None
    payload = record.payload
    base = payload.get("history_base")
    if record.type != "session_meta" or not isinstance(base, dict):
        return None
    if str(payload.get("id") or "").lower() != named.thread:
        return None
    rollout, upto = base.get("thread_id"), base.get("end_ordinal_exclusive")
    offset = base.get("end_byte_offset")
    if not isinstance(rollout, str) or not _ordinal(upto):
        return None
    # A rotated rollout keeps its thread's `forked_from_id` (Codex copies line 1 at a revert); a
    # `history_base` naming that parent is the fork boundary, not a rollout of its own thread.
    if rollout.lower() == str(payload.get("forked_from_id") or "").lower():
        return None
    return Continued(rollout.lower(), upto, offset if _ordinal(offset) else None)


class Unjoined(Exception):
    """The history a rollout continues cannot be read; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# A piece of a thread's history: its first ordinal, its bytes (whole lines), the rollout they
# are of and where in that rollout's file they begin.
_Piece = tuple[int, bytes, str, int]
Rollouts = Callable[[str], tuple[str, bytes] | None]  # a rollout id -> its file's name and bytes


def thread_history(data: bytes, name: str, rollouts: Rollouts) -> bytes:
    """The history of the thread whose current rollout is `data` (named `name`): `data` itself
    unless it continues its thread after a revert (`continued`); then the lines it inherits,
    followed back through the rollouts `rollouts` finds by id, and its own after its
    `session_meta`, whose `history_base` marks a physical boundary, not a turn (a `session_meta`
    past line 1 would make `codex resume` of a fork drop what came before it). Line 1 is
    then the thread's first `session_meta`: its identity, cwd and lineage. Raises `Unjoined`
    when a rollout it continues is missing, cut short, or not cut where its `end_byte_offset`
    says."""
    return b"".join(piece[1] for piece in _pieces(data, name, rollouts, ()))


def _pieces(data: bytes, name: str, rollouts: Rollouts, seen: tuple[str, ...]) -> list[_Piece]:
    base = continued(data, name)
    if base is None:
        named = rollout_name(name)
        return [(0, data, named.rollout if named else name, 0)]
    if base.rollout in seen or len(seen) >= MAX_SEGMENTS:
        raise Unjoined(f"its history_base leads round a cycle of rollouts ({base.rollout})")
    found = rollouts(base.rollout)
    if found is None:
        raise Unjoined(
            f"it continues rollout {base.rollout} of its thread after a revert, and that rollout "
            "is not in the session root"
        )
    inherited = _pieces(found[1], found[0], rollouts, (*seen, base.rollout))
    kept: list[_Piece] = []
    reached: int | None = None  # the last ordinal of the history kept
    for first, piece, rollout, at in inherited:
        # Ordinals as Codex numbers them (`ordinal_cut`), not lines: a remem fork has lines
        # Codex does not number before the ones it does.
        cut, before = ordinal_cut(piece, base.upto, first)
        reached = before if before is not None else reached
        if cut == 0:
            break
        kept.append((first, piece if cut is None else piece[:cut], rollout, at))
        if cut is not None:
            break
    else:
        if reached is None or reached + 1 < base.upto:
            raise Unjoined(f"rollout {base.rollout} ends before ordinal {base.upto}, where it continues")
    if not kept:
        raise Unjoined(f"rollout {base.rollout} has no line before ordinal {base.upto}, where it continues")
    last = kept[-1]
    if base.offset is not None and last[2] == base.rollout and last[3] + len(last[1]) != base.offset:
        raise Unjoined(f"rollout {base.rollout} is not cut at byte {base.offset}, where it continues")
    meta_end = _end_of_line_at(data, 0)
    named = rollout_name(name)
    return [*kept, (base.upto + 1, data[meta_end:], named.rollout if named else name, meta_end)]
