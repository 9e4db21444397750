"""Evidence projection: a finished session as the compact per-turn text a consolidation model reads.

DESIGN §5.3, seed §6.4. The projection reads the *surface*, the message list the session's
model last saw, not the raw log: a compaction replaces older messages by a summary, so those
messages reach the consolidator only through that (marked) summary, never twice. Per turn it
keeps what durable memory can be learned from: real prompts, compaction summaries, the final
reply, and which tools ran and whether they failed. Runtime context, reasoning, tool arguments
and output, request headers, stream chunks, titles and every other event stay in the log, which
source checks, receipts and audits still read whole.

Each turn carries its `turn/start`…`turn/end` seq range: the only thing a proposal may cite.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..credentials import redact
from ..protocol.consolidation import EvidenceRange
from ..protocol.sessions import OPEN
from ..sessions.models import SURFACE_TYPES, ReplaceOp, SessionEvent
from ..sessions.projection import Projection
from ..sessions.reader import SessionLog
from ..sessions.transcript import (
    as_object,
    fenced_code,
    has_text,
    is_compact_checkpoint,
    message_blocks,
    message_source,
    message_text,
    quoted,
)

CODE_BLOCK_LIMIT = 4096  # UTF-8 bytes of a fenced block, fences included, that still enter whole
UNKNOWN_TOOL = "unknown"
SUMMARY_LABEL = "Compaction summary (earlier context replaced):"
USER_LABEL = "User:"
ASSISTANT_LABEL = "Assistant (final):"
# A turn stopped before it finished (the user's Esc, a Codex `turn_aborted`, DSH's `aborted`, a
# turn a session's file ends in once its harness quit):
# its last text is no answer anyone accepted, and the model must not learn it as one.
STOPPED = "This turn was stopped before it finished."
STOPPED_LABEL = "Assistant (last text before the stop):"
# A turn that ended in an error (a provider's refusal, a failed request; DSH's and Codex's
# `error`, Claude Code's API error): its last text may be the harness's error, not an answer.
FAILED = "This turn ended in an error."
FAILED_LABEL = "Last text of the failed turn:"

_HEADING = "## Turn {turn} (evidence {start}-{end})"
_FORKED = (
    "This session is a branch of another session after that session's turn {turn}: turns 1-{turn} "
    "are that session's, reviewed with it, and are left out here."
)
_INHERITED = (
    "This session is a branch of another session after that session's turn {turn}: what came "
    "before is that session's, reviewed with it, and is not shown here; this session's own turns "
    "are numbered from 1."
)
_HEADING_PATTERN = re.compile(r"^## Turn \d+ \(evidence (?P<start>\d+)-(?P<end>\d+)\)$", re.MULTILINE)
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_PLAIN_TOOL_NAME = re.compile(r"[\w.:/-]+")


class _Closed(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class ToolUse(_Closed):
    name: str
    ok: bool


class TurnEvidence(_Closed):
    turn: int
    range: EvidenceRange
    user: list[str] = Field(default_factory=list)
    summaries: list[str] = Field(default_factory=list)
    assistant: str | None = None
    tools: list[ToolUse] = Field(default_factory=list)
    stopped: bool = False  # stopped before it finished: its text is not a final answer
    failed: bool = False  # ended in an error: its text is not a final answer either

    def is_empty(self) -> bool:
        return not (self.user or self.summaries or self.assistant or self.tools)

    def render(self) -> str:
        parts = [_HEADING.format(turn=self.turn, start=self.range.fromSeq, end=self.range.toSeq)]
        parts += [_labelled(SUMMARY_LABEL, summary) for summary in self.summaries]
        parts += [_labelled(USER_LABEL, text) for text in self.user]
        if self.tools:
            parts.append(
                "Tools: " + ", ".join(f"{_tool_name(t.name)} {'ok' if t.ok else 'error'}" for t in self.tools)
            )
        if self.stopped:
            parts.append(STOPPED)
        elif self.failed:
            parts.append(FAILED)
        if self.assistant is not None:
            parts.append(_labelled(self._answer_label(), self.assistant))
        return "\n\n".join(parts)

    def _answer_label(self) -> str:
        return STOPPED_LABEL if self.stopped else FAILED_LABEL if self.failed else ASSISTANT_LABEL


class Evidence(_Closed):
    turns: list[TurnEvidence]
    sourceEvents: int
    # A fork's last turn copied from its parent: its turns up to it are the parent's, reviewed
    # with the parent, and left out (decision 0380). 0: none copied.
    forkedAfter: int = 0
    # A fork that inherits its parent's turns without copying them (a Codex fork, decision
    # 0281): the parent's turn it branched after. None of its turns is the parent's. 0: none.
    inheritedAfter: int = 0

    def is_empty(self) -> bool:
        """Nothing to learn from: no prompt, summary, reply or tool outcome in any turn."""
        return all(turn.is_empty() for turn in self.turns)

    def ranges(self) -> list[EvidenceRange]:
        return [turn.range for turn in self.turns]

    def render(self) -> str:
        """The evidence as the model reads it; log text is always quoted, so it cannot forge a heading."""
        if not self.turns:
            return ""
        return self._branch_note() + "\n\n".join(turn.render() for turn in self.turns) + "\n"

    def _branch_note(self) -> str:
        if self.forkedAfter:
            return _FORKED.format(turn=self.forkedAfter) + "\n\n"
        if self.inheritedAfter:
            return _INHERITED.format(turn=self.inheritedAfter) + "\n\n"
        return ""


def shown_turns(rendered: str) -> list[tuple[EvidenceRange, str]]:
    """Each turn of rendered evidence: its range and its text (for scripted models that read it)."""
    heads = list(_HEADING_PATTERN.finditer(rendered))
    ends = [h.start() for h in heads[1:]] + [len(rendered)]
    return [
        (EvidenceRange(fromSeq=int(h["start"]), toSeq=int(h["end"])), rendered[h.end() : end])
        for h, end in zip(heads, ends, strict=True)
    ]


def _labelled(label: str, text: str) -> str:
    return "\n".join([label, *quoted(text)])


def _tool_name(name: str) -> str:
    return name if _PLAIN_TOOL_NAME.fullmatch(name) else fenced_code(name)


def _utf8_size(text: str) -> int:
    # JSON may carry lone surrogates; counting them must not crash a projection.
    return len(text.encode("utf-8", errors="surrogatepass"))


def _fence_end(lines: list[str], first: int) -> int | None:
    """Index of the last line of the fenced code block opening at `lines[first]`, if one does."""
    opening = _FENCE.match(lines[first])
    if opening is None:
        return None
    fence, info = opening.groups()
    if fence[0] == "`" and "`" in info:
        return None  # ```inline``` code, not a fence (CommonMark)
    closing = re.compile(rf" {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*\Z")
    ends = (i for i in range(first + 1, len(lines)) if closing.match(lines[i]))
    return next(ends, len(lines) - 1)  # an unclosed fence runs to the end of the text


def _elided(block_lines: list[str]) -> str:
    last = block_lines[-1]
    eol = last[len(last.splitlines()[0]) :]
    block = "".join(block_lines)
    size = _utf8_size(block.removesuffix(eol) if eol else block)
    return block if size <= CODE_BLOCK_LIMIT else f"[code block: {size} bytes]{eol}"


def elide_code_blocks(text: str) -> str:
    """`text` with each fenced code block over `CODE_BLOCK_LIMIT` bytes replaced by its size."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    index = 0
    while index < len(lines):
        end = _fence_end(lines, index)
        if end is None:
            out.append(lines[index])
            index += 1
        else:
            out.append(_elided(lines[index : end + 1]))
            index = end + 1
    return "".join(out)


def clean(text: str) -> str:
    """Text fit for evidence: oversized code blocks elided, credentials redacted."""
    # Elide first: the byte count is the source's, and redaction never sees what is dropped anyway.
    return redact(elide_code_blocks(text)).strip()


def _evidence_text(message: Any) -> str:
    """Text blocks as they are, any other shown block (image, file, …) as a bare `[type]`."""
    return clean(message_text(message, _type_only))


def _type_only(block: dict[str, Any]) -> str:
    kind = block.get("type")
    return f"[{kind}]" if isinstance(kind, str) and kind else "[block]"


def _turn_ranges(events: Sequence[SessionEvent]) -> list[TurnEvidence]:
    """One empty `TurnEvidence` per turn, with its range."""
    turns = Projection().fold(events).turns
    last_seq = events[-1].seq if events else 0
    evidence = []
    for index, turn in enumerate(turns):
        if turn.endSeq is not None:
            end = turn.endSeq
        else:  # an unfinished turn: up to the next turn, or the end of the log
            end = turns[index + 1].startSeq - 1 if index + 1 < len(turns) else last_seq
        span = EvidenceRange(fromSeq=turn.startSeq, toSeq=end)
        ended = turn.status  # open: the log ends mid-turn (DSH quit before the turn ended)
        evidence.append(
            TurnEvidence(
                turn=turn.turn, range=span, stopped=ended in ("aborted", OPEN), failed=ended == "error"
            )
        )
    return evidence


def _replaced_span(nodes: list[SessionEvent], op: ReplaceOp) -> tuple[int, int] | None:
    seqs = [node.seq for node in nodes]
    if op.start in seqs and op.end in seqs and seqs.index(op.start) <= seqs.index(op.end):
        return seqs.index(op.start), seqs.index(op.end)
    return None


def _surface(events: Sequence[SessionEvent]) -> list[tuple[SessionEvent, int]]:
    """DSH's `foldSurface`: current nodes in model order, each with the seq that places it in a turn.

    A node is placed at its own seq, except a tool result that replaces one (pruning): it keeps
    the place, and so the turn, of the result it stands for.
    """
    nodes: list[SessionEvent] = []
    place: dict[int, int] = {}
    for event in events:
        op = event.surfaceOp
        if event.type not in SURFACE_TYPES or op is None:
            continue
        span = _replaced_span(nodes, op) if isinstance(op, ReplaceOp) else None
        place[event.seq] = event.seq
        if span is None:
            # An append, or a replace of nodes not on the surface: DSH refuses such a log; keeping
            # the node is the choice that loses nothing.
            nodes.append(event)
            continue
        if event.type == "tool/result":
            place[event.seq] = place[nodes[span[0]].seq]
        nodes[span[0] : span[1] + 1] = [event]
    return [(node, place[node.seq]) for node in nodes]


def _owner(turns: list[TurnEvidence], starts: list[int], seq: int) -> TurnEvidence | None:
    """The turn whose range holds `seq`; between turns (a manual compaction), the turn that ran on it."""
    index = bisect_right(starts, seq) - 1
    if index >= 0 and seq <= turns[index].range.toSeq:
        return turns[index]
    if index + 1 < len(turns):
        return turns[index + 1]
    return turns[-1] if turns else None


def _tool_names(events: Sequence[SessionEvent]) -> dict[str, str]:
    """Tool name by call id, from the calls the model made and the ones that started."""
    names: dict[str, str] = {}
    for event in events:
        data = as_object(event.data)
        if event.type == "assistant/message":
            calls = [b for b in message_blocks(data.get("message")) if b.get("type") == "tool-call"]
            pairs = [(b.get("id"), b.get("name")) for b in calls]
        elif event.type == "tool/call":
            pairs = [(data.get("callId"), data.get("name"))]
        else:
            continue
        names.update((i, n) for i, n in pairs if isinstance(i, str) and isinstance(n, str) and n)
    return names


def _tool_use(data: dict[str, Any], names: dict[str, str]) -> ToolUse:
    message = data.get("message")
    call_id = message_source(message).get("callId")
    name = names.get(call_id, UNKNOWN_TOOL) if isinstance(call_id, str) else UNKNOWN_TOOL
    blocks = message_blocks(message)
    failed = bool(blocks and blocks[0].get("isError")) or data.get("error") is not None
    return ToolUse(name=redact(name), ok=not failed)


def _keep(turn: TurnEvidence, event: SessionEvent, names: dict[str, str]) -> None:
    """Add what a surface node contributes to its turn's evidence."""
    data = as_object(event.data)
    if event.type == "user/message":
        if is_compact_checkpoint(data):
            target = turn.summaries
        elif message_source(data).get("kind") == "user":
            target = turn.user  # other kinds are injected context, not the person
        else:
            return
        text = _evidence_text(data)
        if text:
            target.append(text)
    elif event.type == "assistant/message":
        message = data.get("message")
        if has_text(message):
            turn.assistant = _evidence_text(message)  # the surface is in order: the last one wins
    elif event.type == "tool/result":
        turn.tools.append(_tool_use(data, names))


def project_events(events: Sequence[SessionEvent]) -> Evidence:
    """The evidence of a session's events (in seq order); turns with nothing to show are left out."""
    turns = _turn_ranges(events)
    starts = [turn.range.fromSeq for turn in turns]
    names = _tool_names(events)
    for node, seq in _surface(events):
        owner = _owner(turns, starts, seq)
        if owner is not None:
            _keep(owner, node, names)
    return Evidence(turns=[t for t in turns if not t.is_empty()], sourceEvents=len(events))


def project_evidence(log: SessionLog) -> Evidence:
    """The evidence of a read log. Crash closers are not used: a range cites only real events.
    A fork's turns begun in its seed, its parent's, are left out (decision 0380)."""
    evidence = project_events(log.events)
    seed = log.header.seedLength or 0
    copied = [turn.turn for turn in evidence.turns if turn.range.fromSeq < seed]
    if not copied:
        return evidence
    own = evidence.turns[len(copied) :]  # in seq order: the seed's turns come first
    return evidence.model_copy(update={"turns": own, "forkedAfter": max(copied)})
