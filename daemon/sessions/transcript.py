"""Render a session log as a human Markdown transcript: the log as it happened, turn by turn.

The transcript follows append-origin events, not the compacted surface, so turns a compaction
shadowed stay readable and the compaction itself shows as a marked summary where it happened.
It keeps what a person reviewing a session needs (real prompts, each turn's final reply, tool
outcomes) and leaves out injected runtime context, reasoning and stream chunks. Text from the
log is quoted or put in code spans so it can never forge the transcript's own headings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from .models import SessionEvent
from .reader import SessionLog
from .tool_details import asked, first_line, json_object

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_INLINE_SPECIALS = re.compile(r"([\\`*_\[\]<>#|])")
NOT_FINISHED = "not finished"


def as_object(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object: unknown payload shapes must never crash a rendering."""
    return value if isinstance(value, dict) else {}


def message_blocks(message: Any) -> list[dict[str, Any]]:
    content = as_object(message).get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def utc_iso(epoch_ms: int) -> str:
    """`epoch_ms` as UTC ISO 8601 with milliseconds; safe integers past year 9999 stay numeric."""
    try:
        moment = _EPOCH + timedelta(milliseconds=epoch_ms)
    except OverflowError:
        return f"{epoch_ms} ms since the epoch"
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def fenced_code(text: str) -> str:
    """A code span of `text` on one line, its runs of whitespace one space (a command line)."""
    return _fenced(_one_line(text) or " ")


# Every character `str.splitlines` breaks a line at, and the tab, spelled as an escape; and the
# backslash, so that a name holding `\n` itself stays apart from one holding a line break.
_SPELLED_BREAKS = str.maketrans(
    {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v", "\f": "\\f"}
    | {chr(c): f"\\x{c:02x}" for c in (0x1C, 0x1D, 0x1E, 0x85)}
    | {chr(c): f"\\u{c:04x}" for c in (0x2028, 0x2029)}
)


def fenced_name(text: str) -> str:
    """A code span of a name (a path, an id) as it is: its spaces kept, a line break, tab or
    backslash written as an escape (`\\n`, `\\t`, `\\\\`): a folder may be named so, and
    collapsed it would name another."""
    return _fenced(text.translate(_SPELLED_BREAKS) or " ")


def _fenced(text: str) -> str:
    """A code span that survives backticks inside `text`."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    # Markdown drops one space at each end of a span that has both: padded, the text's own stay.
    ends = text[0] + text[-1]
    pad = " " if text.strip() and ("`" in ends or " " in ends) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def inline(text: str) -> str:
    return _INLINE_SPECIALS.sub(r"\\\1", _one_line(text))


def tool_line(name: str, given: str, outcome: str, said: str) -> str:
    """A transcript's line of one call: `Bash` `ls /missing` — error: No such file or directory"""
    line = fenced_code(name) + (f" {fenced_code(given)}" if given else "")
    return f"- {line} — {outcome}" + (f": {inline(said)}" if said else "")


def quoted(text: str) -> list[str]:
    return [f"> {line}" if line.strip() else ">" for line in text.splitlines() or [""]]


def _placeholder(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind != "image":
        return f"[{kind if isinstance(kind, str) else 'block'}]"
    attachment = as_object(block.get("attachment"))
    parts = [attachment.get("name"), attachment.get("mediaType")]
    width, height = attachment.get("width"), attachment.get("height")
    if isinstance(width, int) and isinstance(height, int):
        parts.append(f"{width}×{height}")
    described = " ".join(p for p in parts if isinstance(p, str) and p)
    return f"[image: {described}]" if described else "[image]"


def message_text(message: Any, placeholder: Callable[[dict[str, Any]], str] | None = None) -> str:
    """Text and placeholders of a message; reasoning and tool calls are shown elsewhere or not at all."""
    pieces = []
    for block in message_blocks(message):
        kind = block.get("type")
        if kind == "text":
            pieces.append(str(block.get("text", "")))
        elif kind not in ("reasoning", "tool-call"):
            pieces.append((placeholder or _placeholder)(block))
    return "\n\n".join(p for p in pieces if p.strip())


def has_text(message: Any) -> bool:
    return any(b.get("type") == "text" and str(b.get("text", "")).strip() for b in message_blocks(message))


def message_source(message: Any) -> dict[str, Any]:
    return as_object(as_object(message).get("source"))


def is_compact_checkpoint(message: Any) -> bool:
    source = message_source(message)
    return source.get("kind") == "plugin" and source.get("plugin") == "compact"


@dataclass
class _Call:
    name: str = "unknown tool"
    outcome: str = NOT_FINISHED
    asked: str = ""  # its main argument (`tool_details.asked`)
    said: str = ""  # of a failed call: the first line it returned


@dataclass
class _Section:
    """A turn, or (with `turn` None) the events between two turns."""

    turn: str | None
    started: int
    inherited: bool
    status: str = "open"
    error: str | None = None
    prompts: list[str] = field(default_factory=list)
    reply: str | None = None
    reply_interrupted: bool = False
    calls: dict[str, _Call] = field(default_factory=dict)  # by callId, in order of first mention
    summaries: list[str] = field(default_factory=list)

    def call(self, call_id: str, name: Any = None) -> _Call:
        entry = self.calls.setdefault(call_id, _Call())
        if isinstance(name, str) and name:
            entry.name = name
        return entry


class _Collector:
    """Folds events, in log order, into sections."""

    def __init__(self, seed_length: int) -> None:
        self.seed_length = seed_length
        self.sections: list[_Section] = []
        self.current: _Section | None = None
        self.title: str | None = None
        self.compactions: set[str] = set()

    def section(self, event: SessionEvent) -> _Section:
        if self.current is None:
            self.current = self._open(None, event)
        return self.current

    def _open(self, turn: str | None, event: SessionEvent) -> _Section:
        section = _Section(turn, event.time, event.seq < self.seed_length)
        self.sections.append(section)
        return section

    def feed(self, event: SessionEvent) -> None:
        data = as_object(event.data)
        if event.type == "turn/start":
            self.current = self._open(str(data.get("turn", "?")), event)
        elif event.type == "turn/end":
            self._end_turn(data)
        elif event.type == "session/title" and isinstance(data.get("title"), str):
            self.title = data["title"]
        elif event.type == "compaction/summary":
            self._summary(event, data.get("compactionId"), data.get("summary"))
        elif event.type == "user/message":
            self._user(event, data)
        elif event.type == "assistant/message" and event.surfaceOp == "append":
            self._assistant(event, data)
        elif event.type == "tool/call" and isinstance(data.get("callId"), str):
            self._asked(self.section(event).call(data["callId"], data.get("name")), data.get("arguments"))
        elif event.type == "tool/result" and event.surfaceOp == "append":
            self._tool_result(event, data)

    def _end_turn(self, data: dict[str, Any]) -> None:
        if self.current is None or self.current.turn is None:
            return
        reason = as_object(data.get("reason"))
        kind = reason.get("kind")
        self.current.status = kind if isinstance(kind, str) and kind else "ended"
        message = as_object(reason.get("error")).get("message")
        self.current.error = message if isinstance(message, str) else None
        self.current = None

    def _summary(self, event: SessionEvent, compaction_id: Any, blocks: Any) -> None:
        # The summary is logged twice (compaction/summary and its checkpoint message): show it once.
        if isinstance(compaction_id, str):
            if compaction_id in self.compactions:
                return
            self.compactions.add(compaction_id)
        self.section(event).summaries.append(message_text({"content": blocks}))

    def _user(self, event: SessionEvent, data: dict[str, Any]) -> None:
        if is_compact_checkpoint(data):
            self._summary(event, message_source(data).get("compactionId"), data.get("content"))
        elif event.surfaceOp == "append" and message_source(data).get("kind") == "user":
            text = message_text(data)
            if text.strip():
                self.section(event).prompts.append(text)

    def _assistant(self, event: SessionEvent, data: dict[str, Any]) -> None:
        section, message = self.section(event), data.get("message")
        for block in message_blocks(message):
            if block.get("type") == "tool-call" and isinstance(block.get("id"), str):
                self._asked(section.call(block["id"], block.get("name")), block.get("arguments"))
        if has_text(message):
            section.reply, section.reply_interrupted = message_text(message), data.get("interrupted") is True

    def _tool_result(self, event: SessionEvent, data: dict[str, Any]) -> None:
        message = data.get("message")
        call_id = message_source(message).get("callId")
        if not isinstance(call_id, str):
            return
        blocks = message_blocks(message)
        failed = bool(blocks and blocks[0].get("isError")) or data.get("error") is not None
        call = self.section(event).call(call_id)
        call.outcome = "error" if failed else "ok"
        if failed:  # the model-facing text, else the internal failure's name (a crash closer's)
            said = first_line(blocks[0].get("content")) if blocks else ""
            call.said = said or first_line(as_object(data.get("error")).get("name"))

    @staticmethod
    def _asked(call: _Call, arguments: Any) -> None:
        if not call.asked:  # the first of its two records (the block, then `tool/call`) says it
            call.asked = asked(json_object(arguments))


def _label(title: str, body: list[str]) -> list[str]:
    return [f"**{title}**", "", *body, ""]


def _heading(section: _Section, *, after_turn: bool) -> str:
    if section.turn is None:
        # Without a heading of its own, between-turn material would read as part of the turn above.
        heading = "## Between turns" if after_turn else "## Before the first turn"
    else:
        heading = f"## Turn {inline(section.turn)} — {inline(section.status)} — {utc_iso(section.started)}"
    return heading + (" — inherited" if section.inherited else "")


def _render_section(section: _Section, *, after_turn: bool) -> list[str]:
    lines = [_heading(section, after_turn=after_turn), ""]
    if section.error:
        lines += [f"Error: {inline(section.error)}", ""]
    for prompt in section.prompts:
        lines += _label("User", quoted(prompt))
    if section.calls:
        lines += _label(
            "Tools", [tool_line(c.name, c.asked, c.outcome, c.said) for c in section.calls.values()]
        )
    if section.reply is not None:
        cut = ["", "_(reply interrupted)_"] if section.reply_interrupted else []
        lines += _label("Assistant", quoted(section.reply) + cut)
    for summary in section.summaries:
        lines += _label("Compaction summary — earlier context was replaced by this summary", quoted(summary))
    return lines


def _fork_turn(sections: list[_Section]) -> str | None:
    inherited = [s.turn for s in sections if s.inherited and s.turn is not None]
    return inherited[-1] if inherited else None


def _render_header(log: SessionLog, collector: _Collector) -> list[str]:
    header = log.header
    lines = [f"# {inline(collector.title or header.id)}", ""]
    lines.append(f"- Session: {fenced_name(header.id)}")
    lines.append(f"- Working directory: {fenced_name(header.cwd) if header.cwd else 'none'}")
    lines.append(f"- Created: {utc_iso(header.createdAt)}")
    if header.parentSession is not None:
        origin = " (subagent)" if header.origin == "subagent" else ""
        lines.append(f"- Parent: {fenced_name(header.parentSession)}{origin}")
    if header.seedLength:
        turn = _fork_turn(collector.sections)
        point = f"after turn {inline(turn)}" if turn else "before the parent's first turn"
        lines.append(f"- Fork point: {point} (first {header.seedLength} events inherited)")
    return [*lines, ""]


def _seed_note(log: SessionLog) -> list[str]:
    parent = fenced_name(log.header.parentSession) if log.header.parentSession else "the parent session"
    return [
        "---",
        "",
        f"_Everything above is inherited from {parent}; this session's own history starts here._",
        "",
    ]


def _transcript_events(log: SessionLog) -> Iterable[SessionEvent]:
    # Of the crash closers only the turn/end is used: it marks the cut-off turn `interrupted`,
    # while a synthetic tool result would turn "not finished" into a generic error.
    return (*log.events, *(c for c in log.closers if c.type == "turn/end"))


def render_transcript(log: SessionLog, title: str | None = None) -> str:
    """The Markdown transcript of `log` (deterministic: a pure function of the events), headed
    by `title` when given, else by the log's own title."""
    seed_length = log.header.seedLength or 0
    collector = _Collector(seed_length)
    for event in _transcript_events(log):
        collector.feed(event)
    if title:
        collector.title = title
    lines = _render_header(log, collector)
    noted, after_turn = seed_length == 0, False
    for section in collector.sections:
        if not noted and not section.inherited:
            lines += _seed_note(log)
            noted = True
        lines += _render_section(section, after_turn=after_turn)
        after_turn = after_turn or section.turn is not None
    if not noted:
        lines += _seed_note(log)
    if not any(s.turn is not None for s in collector.sections):
        lines += ["_No turns yet._", ""]
    return "\n".join(lines).rstrip("\n") + "\n"
