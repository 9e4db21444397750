"""Deterministic generator of realistic DSH sessions for tests, benchmarks and the demo.

Every session is a pure function of its seed: multi-turn conversations with reasoning and
text streams, parallel tool calls with ok/error results, aborted and errored turns, titles,
image prompts, a compaction that replaces a surface range, and children (subagents and
seeded user forks). Scripted sessions take their words from given turns instead (the evaluation
set plants facts in them). Payload shapes follow the fact sheet §3; output goes through the writer.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .models import ReplaceOp, SessionEvent, SessionHeader
from .paths import Encoding
from .writer import SessionWriter, encode_batch

PROVIDER, MODEL = "deepseek-official", "deepseek-v4-flash"
TURN_KINDS = ("text", "tools", "image", "aborted", "error")
_WORDS = [
    "index",
    "memory",
    "branch",
    "session",
    "parser",
    "commit",
    "review",
    "cache",
    "fold",
    "surface",
    "tree",
    "header",
    "frame",
    "checksum",
    "append",
    "batch",
    "writer",
    "reader",
    "lock",
    "fork",
    "seed",
    "title",
    "turn",
    "step",
    "tool",
    "result",
    "query",
    "project",
    "module",
    "test",
    "fixture",
    "schema",
    "digest",
    "offset",
    "replay",
    "stream",
    "chunk",
    "delta",
    "summary",
]
_TOOLS = ("read_file", "bash", "grep", "write_file", "list_dir")


@dataclass
class SessionDraft:
    """A session before it is written: its header and its append batches in order."""

    header: SessionHeader
    batches: list[list[SessionEvent]] = field(default_factory=list)

    @property
    def events(self) -> list[SessionEvent]:
        return [e for batch in self.batches for e in batch]


@dataclass(frozen=True)
class SessionSpec:
    """What to generate. `target_events`/`target_bytes` (logical log bytes) keep adding turns past `turns`."""

    seed: int
    turns: int = 5
    cwd: str = "/home/dev/projects/demo"
    created_at: int = 1_785_000_000_000
    compaction: bool = True
    target_events: int = 0
    target_bytes: int = 0


@dataclass(frozen=True)
class ToolOutput:
    """What a tool returned: its text, and whether it succeeded."""

    text: str
    ok: bool = True


@dataclass(frozen=True)
class ScriptedTool:
    """One tool the agent runs in a scripted turn."""

    name: str
    arguments: dict[str, Any]
    output: ToolOutput


@dataclass(frozen=True)
class ScriptedTurn:
    """A turn whose words are given: the user's prompt, the tools run, the agent's final reply."""

    user: str
    reply: str
    tools: tuple[ScriptedTool, ...] = ()


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high)))


def new_id(rng: random.Random, prefix: str = "") -> str:
    return prefix + str(uuid.UUID(int=rng.getrandbits(128), version=4))


class _Timeline:
    """Appends events with contiguous seqs, a moving clock and a folded surface."""

    def __init__(self, rng: random.Random, start_time: int, seed_events: Sequence[SessionEvent] = ()) -> None:
        self.rng = rng
        self.events: list[SessionEvent] = list(seed_events)
        self.time = start_time
        self.surface: list[int] = []
        for event in self.events:
            self._fold(event)

    def add(
        self, kind: str, data: Any, *, surface: Any = None, sources: list[int] | None = None
    ) -> SessionEvent:
        self.time += self.rng.randint(1, 40)
        event = SessionEvent(
            type=kind,
            seq=len(self.events),
            time=self.time,
            data=data,
            surfaceOp=surface,
            sourceEventSeqs=sources,
        )
        self.events.append(event)
        self._fold(event)
        return event

    def _fold(self, event: SessionEvent) -> None:
        op = event.surfaceOp
        if op == "append":
            self.surface.append(event.seq)
        elif isinstance(op, ReplaceOp):
            start, end = self.surface.index(op.start), self.surface.index(op.end)
            self.surface[start : end + 1] = [event.seq]


class _Turns:
    """Writes whole turns of each kind onto a timeline."""

    def __init__(self, timeline: _Timeline) -> None:
        self.t = timeline
        self.rng = timeline.rng
        self.titled = any(e.type == "session/title" for e in timeline.events)

    def user(self, text: str, *, image: bool = False) -> SessionEvent:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if image:
            digest = f"{self.rng.getrandbits(256):064x}"
            attachment = {
                "attachmentId": f"sha256:{digest}",
                "mediaType": "image/png",
                "width": 64,
                "height": 48,
                "bytes": 2048,
            }
            content.append({"type": "image", "attachment": attachment})
        data = {"id": new_id(self.rng), "role": "user", "content": content, "source": {"kind": "user"}}
        return self.t.add("user/message", data, surface="append")

    def chunk(self, turn: int, step: int, chunk: dict[str, Any], seqs: list[int]) -> None:
        seqs.append(self.t.add("assistant/chunk", {"turn": turn, "step": step, "chunk": chunk}).seq)

    def stream_block(
        self, turn: int, step: int, index: int, block: dict[str, Any], seqs: list[int], *, close: bool = True
    ) -> None:
        kind = block["type"]
        self.chunk(turn, step, {"type": "block-start", "index": index, "blockType": kind}, seqs)
        if kind == "tool-call":
            pieces = _split(block["arguments"], self.rng)
            for k, piece in enumerate(pieces):
                delta = {"type": "tool-call-delta", "index": index, "id": block["id"]}
                delta.update({"name": block["name"]} if k == 0 else {})
                self.chunk(turn, step, {**delta, "argumentsDelta": piece}, seqs)
        else:
            for piece in _split(block["text"], self.rng):
                self.chunk(turn, step, {"type": f"{kind}-delta", "index": index, "text": piece}, seqs)
        if close:
            self.chunk(turn, step, {"type": "block-end", "index": index, "block": block}, seqs)

    def assistant(
        self, turn: int, step: int, blocks: list[dict[str, Any]], *, interrupted: bool = False
    ) -> SessionEvent:
        seqs: list[int] = []
        for index, block in enumerate(blocks):
            self.stream_block(turn, step, index, block, seqs, close=not interrupted)
        usage = {"inputTokens": self.rng.randint(500, 9000), "outputTokens": self.rng.randint(5, 800)}
        if not interrupted:
            self.chunk(turn, step, {"type": "usage", "usage": usage}, seqs)
            finish = "tool-calls" if blocks[-1]["type"] == "tool-call" else "stop"
            self.chunk(turn, step, {"type": "finish", "reason": {"kind": finish}}, seqs)
        source = {"kind": "model", "provider": PROVIDER, "model": MODEL}
        data: dict[str, Any] = {
            "turn": turn,
            "step": step,
            "message": {"id": new_id(self.rng), "role": "assistant", "content": blocks, "source": source},
        }
        data.update({"interrupted": True} if interrupted else {"usage": usage})
        return self.t.add("assistant/message", data, surface="append", sources=seqs)

    def open_turn(self, turn: int, prompt: str, *, image: bool = False) -> None:
        self.t.add("turn/start", {"turn": turn})
        self.t.add("step/start", {"turn": turn, "step": 1})
        message = self.user(prompt, image=image)
        if not self.titled:
            title = " ".join(prompt.split()[:5])
            self.t.add(
                "session/title",
                {"title": title, "messageSeqs": [message.seq], "source": {"kind": "fallback"}},
            )
            self.titled = True
            header = {"config": {"provider": PROVIDER, "model": MODEL}, "system": "You are a coding agent."}
            self.t.add("request/header", {"header": header, "reason": "initial"})
        self.t.add("request/context", {"provider": PROVIDER, "model": MODEL})

    def close_step(self, turn: int, step: int) -> None:
        self.t.add("step/end", {"turn": turn, "step": step})

    def close_turn(self, turn: int, reason: dict[str, Any]) -> None:
        self.t.add("turn/end", {"turn": turn, "reason": reason})

    def answer_turn(self, turn: int, *, image: bool = False) -> None:
        self.open_turn(turn, _words(self.rng, 4, 14).capitalize() + "?", image=image)
        blocks = [{"type": "text", "text": _words(self.rng, 8, 60) + "."}]
        if self.rng.random() < 0.6:
            blocks.insert(0, {"type": "reasoning", "text": _words(self.rng, 6, 30) + "."})
        self.assistant(turn, 1, blocks)
        self.close_step(turn, 1)
        self.close_turn(turn, {"kind": "completed"})

    def tool_results(
        self, turn: int, calls: list[dict[str, Any]], outputs: Sequence[ToolOutput] = ()
    ) -> None:
        """Each call's `tool/call` and `tool/result`; without `outputs`, random ones in any order."""
        call_seqs = {
            c["id"]: self.t.add(
                "tool/call",
                {"turn": turn, "step": 1, "callId": c["id"], "name": c["name"], "arguments": c["arguments"]},
            ).seq
            for c in calls
        }
        given = dict(zip((c["id"] for c in calls), outputs, strict=True)) if outputs else None
        # Parallel calls settle in any order; scripted ones in the order given.
        for call in calls if given else self.rng.sample(calls, len(calls)):
            output = given[call["id"]] if given else self._random_output()
            block = {
                "type": "tool-result",
                "toolCallId": call["id"],
                "content": [{"type": "text", "text": output.text}],
                "isError": not output.ok,
            }
            message = {
                "id": new_id(self.rng),
                "role": "user",
                "content": [block],
                "source": {"kind": "tool", "callId": call["id"]},
            }
            self.t.add(
                "tool/result",
                {"turn": turn, "step": 1, "message": message},
                surface="append",
                sources=[call_seqs[call["id"]]],
            )

    def _random_output(self) -> ToolOutput:
        failed = self.rng.random() < 0.3
        return ToolOutput(
            f"Error: {_words(self.rng, 2, 6)}" if failed else _words(self.rng, 5, 40), not failed
        )

    def tools_turn(self, turn: int) -> None:
        self.open_turn(turn, _words(self.rng, 5, 12).capitalize() + ".")
        calls = [_tool_call(self.rng) for _ in range(self.rng.randint(1, 4))]
        self._run_tools(turn, calls)
        self._answer(turn, 2, _words(self.rng, 10, 50) + ".")

    def scripted_turn(self, turn: int, script: ScriptedTurn) -> None:
        """A turn with the given prompt, tool runs and final reply (one step when no tool runs)."""
        self.open_turn(turn, script.user)
        if script.tools:
            calls = [_named_call(self.rng, t.name, t.arguments) for t in script.tools]
            self._run_tools(turn, calls, [t.output for t in script.tools])
        self._answer(turn, 2 if script.tools else 1, script.reply)

    def _run_tools(self, turn: int, calls: list[dict[str, Any]], outputs: Sequence[ToolOutput] = ()) -> None:
        """Step 1 calls the tools and gets their results; step 2 starts."""
        self.assistant(turn, 1, calls)
        self.tool_results(turn, calls, outputs)
        self.close_step(turn, 1)
        self.t.add("step/start", {"turn": turn, "step": 2})
        self.t.add("request/context", {"provider": PROVIDER, "model": MODEL})

    def _answer(self, turn: int, step: int, reply: str) -> None:
        self.assistant(turn, step, [{"type": "text", "text": reply}])
        self.close_step(turn, step)
        self.close_turn(turn, {"kind": "completed"})

    def aborted_turn(self, turn: int) -> None:
        self.open_turn(turn, _words(self.rng, 4, 10).capitalize() + ".")
        self.assistant(turn, 1, [{"type": "text", "text": _words(self.rng, 3, 9)}], interrupted=True)
        self.close_step(turn, 1)
        self.close_turn(turn, {"kind": "aborted", "reason": {"kind": "user"}})

    def error_turn(self, turn: int) -> None:
        self.open_turn(turn, _words(self.rng, 4, 10).capitalize() + ".")
        failure = {"message": "simulated provider error (HTTP 503)", "code": "UNAVAILABLE"}
        self.t.add(
            "assistant/chunk",
            {
                "turn": turn,
                "step": 1,
                "chunk": {"type": "finish", "reason": {"kind": "error", "failure": failure}},
            },
        )
        self.close_step(turn, 1)
        self.close_turn(turn, {"kind": "error", "error": failure})

    def compaction(self) -> None:
        """Replace the older half of the surface by a summary checkpoint (between turns)."""
        nodes = self.t.surface[: max(1, len(self.t.surface) // 2)]
        compaction_id = new_id(self.rng)
        start = self.t.add("compaction/start", {"compactionId": compaction_id, "turn": None})
        summary_text = [{"type": "text", "text": "Summary: " + _words(self.rng, 10, 30) + "."}]
        summary = self.t.add(
            "compaction/summary",
            {
                "compactionId": compaction_id,
                "summary": summary_text,
                "shadowedRange": {"start": nodes[0], "end": nodes[-1]},
                "shadowedSeqs": nodes,
                "shadowedTokenCount": self.rng.randint(1000, 50000),
                "provider": PROVIDER,
                "model": MODEL,
            },
        )
        message = {
            "id": new_id(self.rng),
            "role": "user",
            "content": summary_text,
            "source": {"kind": "plugin", "plugin": "compact", "compactionId": compaction_id},
        }
        op = ReplaceOp(op="replace", start=nodes[0], end=nodes[-1])
        self.t.add("user/message", message, surface=op, sources=[start.seq, summary.seq, *nodes])
        self.t.add("compaction/end", {"compactionId": compaction_id, "turn": None})

    def turn(self, turn: int, kind: str) -> None:
        {
            "text": self.answer_turn,
            "tools": self.tools_turn,
            "image": lambda n: self.answer_turn(n, image=True),
            "aborted": self.aborted_turn,
            "error": self.error_turn,
        }[kind](turn)


def _split(text: str, rng: random.Random) -> list[str]:
    """Stream pieces of `text` (>= 3 pieces for long texts, so runs pack)."""
    pieces, pos = [], 0
    while pos < len(text):
        step = rng.randint(3, 12)
        pieces.append(text[pos : pos + step])
        pos += step
    return pieces or [""]


def _tool_call(rng: random.Random) -> dict[str, Any]:
    name = rng.choice(_TOOLS)
    arguments = {"path": f"src/{rng.choice(_WORDS)}.py", "limit": rng.randint(10, 500)}
    return _named_call(rng, name, arguments)


def _named_call(rng: random.Random, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool-call",
        "id": f"call_{rng.getrandbits(48):012x}",
        "name": name,
        "arguments": json.dumps(arguments, separators=(",", ":")),
    }


def _turn_kinds(rng: random.Random) -> Iterator[str]:
    """Every kind once (shuffled), then a realistic mix dominated by text and tool turns."""
    first = list(TURN_KINDS)
    rng.shuffle(first)
    yield from first
    while True:
        yield rng.choices(TURN_KINDS, weights=(5, 5, 1, 1, 1))[0]


def _fill_turns(
    turns: _Turns, spec: SessionSpec, first_turn: int, batches: list[list[SessionEvent]], mark: int = 0
) -> None:
    """Add turns (one batch each) until the spec is met; events before `mark` are batched already."""
    events, kinds, turn, size = turns.t.events, _turn_kinds(turns.rng), first_turn, 0
    while turn - first_turn < spec.turns or len(events) < spec.target_events or size < spec.target_bytes:
        if spec.compaction and turn - first_turn == 3 and len(turns.t.surface) >= 2:
            turns.compaction()
        turns.turn(turn, next(kinds))
        batch, mark = events[mark:], len(events)
        size += len(encode_batch(batch)) if spec.target_bytes else 0
        batches.append(batch)
        turn += 1


def build_session(spec: SessionSpec, *, session_id: str | None = None) -> SessionDraft:
    """A main (root) session, one batch per turn."""
    rng = random.Random(spec.seed)
    header = SessionHeader(id=session_id or new_id(rng, "session-"), createdAt=spec.created_at, cwd=spec.cwd)
    draft = SessionDraft(header)
    _fill_turns(_Turns(_Timeline(rng, spec.created_at)), spec, 1, draft.batches)
    return draft


def build_scripted_session(
    turns: Sequence[ScriptedTurn], *, seed: int, cwd: str, created_at: int = 1_785_000_000_000
) -> SessionDraft:
    """A main session of exactly `turns`, one batch per turn; ids and times come from `seed`."""
    rng = random.Random(seed)
    draft = SessionDraft(SessionHeader(id=new_id(rng, "session-"), createdAt=created_at, cwd=cwd))
    _script_turns(_Turns(_Timeline(rng, created_at)), turns, 1, draft.batches)
    return draft


def _script_turns(
    writer: _Turns,
    turns: Sequence[ScriptedTurn],
    first_turn: int,
    batches: list[list[SessionEvent]],
    mark: int = 0,
) -> None:
    """Add `turns` from turn number `first_turn` on, one batch each; events before `mark` are
    batched already."""
    for number, script in enumerate(turns, start=first_turn):
        writer.scripted_turn(number, script)
        batches.append(writer.t.events[mark:])
        mark = len(writer.t.events)


def _last_turn(events: list[SessionEvent]) -> int:
    return max((e.data["turn"] for e in events if e.type == "turn/start"), default=0)


def host_fork_cut(events: list[SessionEvent], after_turn: int) -> int:
    """Seed length of a Host fork after `after_turn`: past its turn/end, up to the next turn/start."""
    ends = [e.seq for e in events if e.type == "turn/end" and e.data.get("turn") == after_turn]
    if not ends:
        raise ValueError(f"turn {after_turn} has no turn/end to fork after")
    cut = ends[0] + 1
    while cut < len(events) and events[cut].type != "turn/start":
        cut += 1
    return cut


def fork_session(
    parent: SessionDraft, spec: SessionSpec, *, after_turn: int, script: Sequence[ScriptedTurn] = ()
) -> SessionDraft:
    """A user fork: the parent's prefix as seed, `session/end-seed`, then `spec.turns` new turns
    (or exactly the turns of `script`)."""
    rng = random.Random(spec.seed)
    seed = parent.events[: host_fork_cut(parent.events, after_turn)]
    created = max(spec.created_at, parent.events[-1].time + 1)
    header = SessionHeader(
        id=new_id(rng, "session-"),
        createdAt=created,
        cwd=parent.header.cwd,
        parentSession=parent.header.id,
        seedLength=len(seed),
    )
    timeline = _Timeline(rng, created, seed)
    if not seed or seed[-1].type != "session/end-seed":
        timeline.add("session/end-seed", {})
    # DSH writes the seed and its end marker as the child's first batch.
    draft = SessionDraft(header, [list(timeline.events)])
    if script:
        _script_turns(_Turns(timeline), script, _last_turn(seed) + 1, draft.batches, len(timeline.events))
        return draft
    _fill_turns(
        _Turns(timeline),
        replace(spec, compaction=False),
        _last_turn(seed) + 1,
        draft.batches,
        len(timeline.events),
    )
    return draft


def subagent_session(
    parent: SessionDraft,
    spec: SessionSpec,
    *,
    label: str = "child task",
    script: Sequence[ScriptedTurn] = (),
) -> SessionDraft:
    """A subagent child: `origin: subagent`, depth + 1, a descriptor, then its own turns (or
    exactly the turns of `script`)."""
    rng = random.Random(spec.seed)
    spawn = next((e for e in parent.events if e.type == "tool/call"), parent.events[-1])
    created = spawn.time + 1
    header = SessionHeader(
        id=new_id(rng),
        createdAt=created,
        cwd=parent.header.cwd,
        parentSession=parent.header.id,
        origin="subagent",
        delegationDepth=parent.header.delegationDepth + 1,
    )
    timeline = _Timeline(rng, created)
    timeline.add(
        "subagent/descriptor", {"version": 2, "mode": "one-shot", "provider": "spawn", "label": label}
    )
    draft = SessionDraft(header)
    if script:
        # The descriptor travels with the first turn, as DSH writes it.
        _script_turns(_Turns(timeline), script, 1, draft.batches)
        return draft
    _fill_turns(_Turns(timeline), replace(spec, compaction=False, turns=max(spec.turns, 1)), 1, draft.batches)
    return draft


def write_session(root: Path, draft: SessionDraft, *, encoding: Encoding | None = None) -> Path:
    """Write `draft` batch by batch through `SessionWriter`; returns the log path."""
    with SessionWriter(root, draft.header, encoding=encoding) as writer:
        for batch in draft.batches:
            writer.append(batch)
        return writer.path


@dataclass(frozen=True)
class Family:
    """A main session with one user fork and one subagent child."""

    main: SessionDraft
    fork: SessionDraft
    subagent: SessionDraft

    @property
    def drafts(self) -> list[SessionDraft]:
        return [self.main, self.fork, self.subagent]


def build_family(seed: int, *, turns: int = 5, cwd: str = "/home/dev/projects/demo") -> Family:
    main = build_session(SessionSpec(seed=seed, turns=turns, cwd=cwd))
    fork = fork_session(main, SessionSpec(seed=seed + 1, turns=2, cwd=cwd), after_turn=2)
    child = subagent_session(main, SessionSpec(seed=seed + 2, turns=1, cwd=cwd))
    return Family(main, fork, child)
