"""DSH sessions written from a script: the evaluation set's cases and the demo's sessions.

A session is a pure function of its seed and its script: each turn has the given prompt, the
tools it runs with their outputs, and the agent's final reply, streamed as DSH streams them
(chunks, parallel tool calls, results), under contiguous seqs and a moving clock; its first
prompt titles it. Forks (a Host fork's seed and `session/end-seed`) and subagent children
(`origin: subagent`, a descriptor) continue a parent. `TurnWriter` and `Timeline` are the
machinery the tests' random generator builds its turns with too. Payload shapes follow the
fact sheet §3; output goes through the writer.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .models import ReplaceOp, SessionEvent, SessionHeader
from .paths import Encoding
from .writer import SessionWriter

PROVIDER, MODEL = "deepseek-official", "deepseek-v4-flash"
CREATED_AT = 1_785_000_000_000  # ms: a fixed start, so a session depends on its seed alone
ToolCall = dict[str, Any]  # an assistant's `tool-call` block


@dataclass
class SessionDraft:
    """A session before it is written: its header and its append batches in order."""

    header: SessionHeader
    batches: list[list[SessionEvent]] = field(default_factory=list)

    @property
    def events(self) -> list[SessionEvent]:
        return [e for batch in self.batches for e in batch]


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


def new_id(rng: random.Random, prefix: str = "") -> str:
    return prefix + str(uuid.UUID(int=rng.getrandbits(128), version=4))


class Timeline:
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


class TurnWriter:
    """Writes the parts of turns onto a timeline, and whole scripted turns."""

    def __init__(self, timeline: Timeline) -> None:
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

    def tool_calls(self, turn: int, calls: list[ToolCall]) -> dict[str, int]:
        """Each call's `tool/call` event; their seqs by call id."""
        return {
            c["id"]: self.t.add(
                "tool/call",
                {"turn": turn, "step": 1, "callId": c["id"], "name": c["name"], "arguments": c["arguments"]},
            ).seq
            for c in calls
        }

    def tool_result(self, turn: int, call: ToolCall, output: ToolOutput, call_seq: int) -> None:
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
            "tool/result", {"turn": turn, "step": 1, "message": message}, surface="append", sources=[call_seq]
        )

    def scripted_turn(self, turn: int, script: ScriptedTurn) -> None:
        """A turn with the given prompt, tool runs and final reply (one step when no tool runs)."""
        self.open_turn(turn, script.user)
        if script.tools:
            calls = [named_call(self.rng, t.name, t.arguments) for t in script.tools]
            outputs = [t.output for t in script.tools]

            def settle(turn: int, calls: list[ToolCall]) -> None:
                seqs = self.tool_calls(turn, calls)
                for call, output in zip(calls, outputs, strict=True):  # in the order given
                    self.tool_result(turn, call, output, seqs[call["id"]])

            self.run_tools(turn, calls, settle)
        self.answer(turn, 2 if script.tools else 1, script.reply)

    def run_tools(
        self, turn: int, calls: list[ToolCall], settle: Callable[[int, list[ToolCall]], None]
    ) -> None:
        """Step 1 calls the tools and `settle` writes their calls and results; step 2 starts."""
        self.assistant(turn, 1, calls)
        settle(turn, calls)
        self.close_step(turn, 1)
        self.t.add("step/start", {"turn": turn, "step": 2})
        self.t.add("request/context", {"provider": PROVIDER, "model": MODEL})

    def answer(self, turn: int, step: int, reply: str) -> None:
        self.assistant(turn, step, [{"type": "text", "text": reply}])
        self.close_step(turn, step)
        self.close_turn(turn, {"kind": "completed"})


def _split(text: str, rng: random.Random) -> list[str]:
    """Stream pieces of `text` (>= 3 pieces for long texts, so runs pack)."""
    pieces, pos = [], 0
    while pos < len(text):
        step = rng.randint(3, 12)
        pieces.append(text[pos : pos + step])
        pos += step
    return pieces or [""]


def named_call(rng: random.Random, name: str, arguments: dict[str, Any]) -> ToolCall:
    return {
        "type": "tool-call",
        "id": f"call_{rng.getrandbits(48):012x}",
        "name": name,
        "arguments": json.dumps(arguments, separators=(",", ":")),
    }


def build_scripted_session(
    turns: Sequence[ScriptedTurn], *, seed: int, cwd: str, created_at: int = CREATED_AT
) -> SessionDraft:
    """A main session of exactly `turns`, one batch per turn; ids and times come from `seed`."""
    rng = random.Random(seed)
    draft = SessionDraft(SessionHeader(id=new_id(rng, "session-"), createdAt=created_at, cwd=cwd))
    script_turns(TurnWriter(Timeline(rng, created_at)), turns, 1, draft.batches)
    return draft


def script_turns(
    writer: TurnWriter,
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


def last_turn(events: list[SessionEvent]) -> int:
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


def fork_draft(
    parent: SessionDraft, rng: random.Random, *, after_turn: int, created_at: int
) -> tuple[SessionDraft, Timeline]:
    """A user fork of `parent` after `after_turn`, begun: the parent's prefix as seed and
    `session/end-seed`, as DSH writes them, the child's first batch; the timeline goes on."""
    seed = parent.events[: host_fork_cut(parent.events, after_turn)]
    created = max(created_at, parent.events[-1].time + 1)
    header = SessionHeader(
        id=new_id(rng, "session-"),
        createdAt=created,
        cwd=parent.header.cwd,
        parentSession=parent.header.id,
        seedLength=len(seed),
    )
    timeline = Timeline(rng, created, seed)
    if not seed or seed[-1].type != "session/end-seed":
        timeline.add("session/end-seed", {})
    return SessionDraft(header, [list(timeline.events)]), timeline


def fork_session(
    parent: SessionDraft,
    script: Sequence[ScriptedTurn],
    *,
    seed: int,
    after_turn: int,
    created_at: int = CREATED_AT,
) -> SessionDraft:
    """A user fork of `parent` after `after_turn`, going on with exactly the turns of `script`."""
    draft, timeline = fork_draft(parent, random.Random(seed), after_turn=after_turn, created_at=created_at)
    script_turns(
        TurnWriter(timeline), script, last_turn(timeline.events) + 1, draft.batches, len(timeline.events)
    )
    return draft


def subagent_draft(parent: SessionDraft, rng: random.Random, *, label: str) -> tuple[SessionDraft, Timeline]:
    """A subagent child of `parent`, begun: `origin: subagent`, depth + 1, and its descriptor,
    which travels with its first turn's batch, as DSH writes it."""
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
    timeline = Timeline(rng, created)
    timeline.add(
        "subagent/descriptor", {"version": 2, "mode": "one-shot", "provider": "spawn", "label": label}
    )
    return SessionDraft(header), timeline


def subagent_session(
    parent: SessionDraft, script: Sequence[ScriptedTurn], *, seed: int, label: str = "child task"
) -> SessionDraft:
    """A subagent child of `parent` with exactly the turns of `script`."""
    draft, timeline = subagent_draft(parent, random.Random(seed), label=label)
    script_turns(TurnWriter(timeline), script, 1, draft.batches)
    return draft


def write_session(root: Path, draft: SessionDraft, *, encoding: Encoding | None = None) -> Path:
    """Write `draft` batch by batch through `SessionWriter`; returns the log path."""
    with SessionWriter(root, draft.header, encoding=encoding) as writer:
        for batch in draft.batches:
            writer.append(batch)
        return writer.path
