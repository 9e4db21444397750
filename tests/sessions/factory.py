"""Deterministic generator of realistic DSH sessions for tests and benchmarks.

Every session is a pure function of its seed: multi-turn conversations with reasoning and
text streams, parallel tool calls with ok/error results settling in any order, aborted and
errored turns, titles, image prompts, a compaction that replaces a surface range, and children
(subagents and seeded user forks). Turns are written with the shipped scripted-session
machinery (`remem.daemon.sessions.scripted`, which the evaluation set and the demo use), whose
names are exported here too so a test imports its sessions from one place.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from remem.daemon.sessions.models import ReplaceOp, SessionEvent, SessionHeader
from remem.daemon.sessions.paths import Encoding, encode_segment, project_key
from remem.daemon.sessions.scripted import (
    CREATED_AT,
    MODEL,
    PROVIDER,
    ScriptedTool,
    ScriptedTurn,
    SessionDraft,
    Timeline,
    ToolCall,
    ToolOutput,
    TurnWriter,
    build_scripted_session,
    fork_draft,
    host_fork_cut,
    last_turn,
    named_call,
    new_id,
    subagent_draft,
    write_session,
)
from remem.daemon.sessions.scripted import fork_session as scripted_fork
from remem.daemon.sessions.scripted import subagent_session as scripted_subagent
from remem.daemon.sessions.writer import encode_batch

__all__ = [
    "Family",
    "ScriptedTool",
    "ScriptedTurn",
    "SessionDraft",
    "SessionSpec",
    "ToolOutput",
    "build_family",
    "build_scripted_session",
    "build_session",
    "fork_session",
    "host_fork_cut",
    "new_id",
    "subagent_session",
    "write_session",
]

TURN_KINDS = ("text", "tools", "image", "aborted", "error")
_WORDS = (
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
)
_TOOLS = ("read_file", "bash", "grep", "write_file", "list_dir")


@dataclass(frozen=True)
class SessionSpec:
    """What to generate. `target_events`/`target_bytes` (logical log bytes) keep adding turns past `turns`."""

    seed: int
    turns: int = 5
    cwd: str = "/home/dev/projects/demo"
    created_at: int = CREATED_AT
    compaction: bool = True
    target_events: int = 0
    target_bytes: int = 0


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high)))


class _RandomTurns(TurnWriter):
    """Whole turns of each kind, their words and tool outputs drawn from the seed."""

    def turn(self, turn: int, kind: str) -> None:
        {
            "text": self.answer_turn,
            "tools": self.tools_turn,
            "image": lambda n: self.answer_turn(n, image=True),
            "aborted": self.aborted_turn,
            "error": self.error_turn,
        }[kind](turn)

    def answer_turn(self, turn: int, *, image: bool = False) -> None:
        self.open_turn(turn, _words(self.rng, 4, 14).capitalize() + "?", image=image)
        blocks = [{"type": "text", "text": _words(self.rng, 8, 60) + "."}]
        if self.rng.random() < 0.6:
            blocks.insert(0, {"type": "reasoning", "text": _words(self.rng, 6, 30) + "."})
        self.assistant(turn, 1, blocks)
        self.close_step(turn, 1)
        self.close_turn(turn, {"kind": "completed"})

    def tools_turn(self, turn: int) -> None:
        self.open_turn(turn, _words(self.rng, 5, 12).capitalize() + ".")
        calls = [_tool_call(self.rng) for _ in range(self.rng.randint(1, 4))]
        self.run_tools(turn, calls, self._settle_in_any_order)
        self.answer(turn, 2, _words(self.rng, 10, 50) + ".")

    def _settle_in_any_order(self, turn: int, calls: list[ToolCall]) -> None:
        seqs = self.tool_calls(turn, calls)
        for call in self.rng.sample(calls, len(calls)):  # parallel calls settle in any order
            failed = self.rng.random() < 0.3
            text = f"Error: {_words(self.rng, 2, 6)}" if failed else _words(self.rng, 5, 40)
            self.tool_result(turn, call, ToolOutput(text, not failed), seqs[call["id"]])

    def aborted_turn(self, turn: int) -> None:
        self.open_turn(turn, _words(self.rng, 4, 10).capitalize() + ".")
        self.assistant(turn, 1, [{"type": "text", "text": _words(self.rng, 3, 9)}], interrupted=True)
        self.close_step(turn, 1)
        self.close_turn(turn, {"kind": "aborted", "reason": {"kind": "user"}})

    def error_turn(self, turn: int) -> None:
        self.open_turn(turn, _words(self.rng, 4, 10).capitalize() + ".")
        failure = {"message": "simulated provider error (HTTP 503)", "code": "UNAVAILABLE"}
        chunk = {"type": "finish", "reason": {"kind": "error", "failure": failure}}
        self.t.add("assistant/chunk", {"turn": turn, "step": 1, "chunk": chunk})
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


def _tool_call(rng: random.Random) -> ToolCall:
    name = rng.choice(_TOOLS)
    arguments = {"path": f"src/{rng.choice(_WORDS)}.py", "limit": rng.randint(10, 500)}
    return named_call(rng, name, arguments)


def _turn_kinds(rng: random.Random) -> Iterator[str]:
    """Every kind once (shuffled), then a realistic mix dominated by text and tool turns."""
    first = list(TURN_KINDS)
    rng.shuffle(first)
    yield from first
    while True:
        yield rng.choices(TURN_KINDS, weights=(5, 5, 1, 1, 1))[0]


def _fill_turns(
    turns: _RandomTurns, spec: SessionSpec, first_turn: int, batches: list[list[SessionEvent]], mark: int = 0
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
    _fill_turns(_RandomTurns(Timeline(rng, spec.created_at)), spec, 1, draft.batches)
    return draft


def fork_session(
    parent: SessionDraft, spec: SessionSpec, *, after_turn: int, script: Sequence[ScriptedTurn] = ()
) -> SessionDraft:
    """A user fork: the parent's prefix as seed, `session/end-seed`, then `spec.turns` new turns
    (or exactly the turns of `script`)."""
    if script:
        return scripted_fork(
            parent, script, seed=spec.seed, after_turn=after_turn, created_at=spec.created_at
        )
    rng = random.Random(spec.seed)
    draft, timeline = fork_draft(parent, rng, after_turn=after_turn, created_at=spec.created_at)
    first = last_turn(timeline.events) + 1
    _fill_turns(
        _RandomTurns(timeline), replace(spec, compaction=False), first, draft.batches, len(timeline.events)
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
    if script:
        return scripted_subagent(parent, script, seed=spec.seed, label=label)
    draft, timeline = subagent_draft(parent, random.Random(spec.seed), label=label)
    _fill_turns(
        _RandomTurns(timeline), replace(spec, compaction=False, turns=max(spec.turns, 1)), 1, draft.batches
    )
    return draft


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


def write_copies(
    root: Path, count: int, cwds: Sequence[str], *, first: int = 0, target_bytes: int = 100_000
) -> list[Path]:
    """`count` raw logs of about `target_bytes` under `root/corpus`: one generated log, re-headed
    under fresh ids (`session-bench-NNNNN`, numbered from `first`) and dealt over `cwds` in
    turn, each dated long ago (not live by recency). Quick to make in the thousands."""
    draft = build_session(SessionSpec(seed=1, target_bytes=target_bytes, cwd=cwds[0]))
    template = write_session(root / f"template-{first}", draft, encoding=Encoding.RAW)
    header, _, body = template.read_bytes().partition(b"\n")
    paths = []
    for number in range(first, first + count):
        cwd = cwds[number % len(cwds)]
        record = {**json.loads(header), "id": f"session-bench-{number:05d}", "cwd": cwd}
        path = root / "corpus" / project_key(cwd) / encode_segment(record["id"]) / Encoding.RAW.file_name
        path.parent.mkdir(parents=True)
        path.write_bytes(json.dumps(record, separators=(",", ":")).encode() + b"\n" + body)
        os.utime(path, (1_600_000_000, 1_600_000_000))
        paths.append(path)
    return paths
