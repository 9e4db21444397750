"""The session factory: deterministic, feature-complete, DSH-shaped, scalable."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from remem.daemon.consolidation.evidence import project_evidence
from remem.daemon.sessions.paths import Encoding
from remem.daemon.sessions.reader import read_session
from remem.daemon.sessions.writer import encode_batch
from tests.sessions.factory import (
    ScriptedTool,
    ScriptedTurn,
    SessionSpec,
    ToolOutput,
    build_family,
    build_scripted_session,
    build_session,
    fork_session,
    host_fork_cut,
    subagent_session,
    write_session,
)


def _records(draft) -> list[dict]:
    return [e.to_record() for e in draft.events]


def test_same_seed_same_session_different_seed_different_session() -> None:
    assert _records(build_session(SessionSpec(seed=4))) == _records(build_session(SessionSpec(seed=4)))
    assert _records(build_session(SessionSpec(seed=4))) != _records(build_session(SessionSpec(seed=5)))


def test_main_session_has_every_feature() -> None:
    events = build_session(SessionSpec(seed=2, turns=6)).events
    types = Counter(e.type for e in events)
    reasons = {e.data["reason"]["kind"] for e in events if e.type == "turn/end"}
    assert reasons == {"completed", "aborted", "error"}
    assert types["turn/start"] == types["turn/end"] == 6 and types["session/title"] == 1
    assert {e.data["message"]["content"][0]["isError"] for e in events if e.type == "tool/result"} == {
        True,
        False,
    }
    assert any(
        b.get("type") == "image" for e in events if e.type == "user/message" for b in e.data["content"]
    )
    assert any(e.data.get("interrupted") for e in events if e.type == "assistant/message")
    replace = [e for e in events if e.type == "user/message" and e.surfaceOp != "append"]
    assert len(replace) == 1 and replace[0].data["source"]["plugin"] == "compact"
    summary = next(e for e in events if e.type == "compaction/summary")
    assert replace[0].sourceEventSeqs[2:] == summary.data["shadowedSeqs"]


def test_parallel_tool_calls_cite_their_tool_call() -> None:
    events = build_session(SessionSpec(seed=8, turns=10)).events
    calls = {e.data["callId"]: e.seq for e in events if e.type == "tool/call"}
    results = [e for e in events if e.type == "tool/result"]
    assert results and all(
        r.sourceEventSeqs == [calls[r.data["message"]["source"]["callId"]]] for r in results
    )
    per_step = Counter((e.data["turn"], e.data["step"]) for e in events if e.type == "tool/call")
    assert max(per_step.values()) > 1


def test_chunk_runs_are_packed_on_disk() -> None:
    draft = build_session(SessionSpec(seed=3, turns=8))
    text = b"".join(encode_batch(b) for b in draft.batches)
    for row in (b'"type":"text-chunks"', b'"type":"reasoning-chunks"', b'"type":"tool-call-chunks"'):
        assert row in text


def test_user_fork_follows_host_fork_rules(tmp_path: Path) -> None:
    family = build_family(21, turns=4)
    main, fork = family.main, family.fork
    cut = host_fork_cut(main.events, 2)
    assert fork.header.parentSession == main.header.id and fork.header.seedLength == cut
    assert fork.header.origin is None and fork.header.delegationDepth == 0
    assert _records(fork)[:cut] == _records(main)[:cut]
    assert fork.events[cut].type == "session/end-seed" and fork.batches[0] == fork.events[: cut + 1]
    assert fork.events[cut + 1].type == "turn/start" and fork.events[cut + 1].data["turn"] == 3
    assert main.events[cut - 1].type != "turn/start" and (
        cut == len(main.events) or main.events[cut].type == "turn/start"
    )


def test_fork_needs_a_finished_turn() -> None:
    main = build_session(SessionSpec(seed=1, turns=2))
    with pytest.raises(ValueError, match="no turn/end"):
        fork_session(main, SessionSpec(seed=2), after_turn=7)


def test_subagent_child_header() -> None:
    family = build_family(30)
    child = family.subagent.header
    assert (child.origin, child.delegationDepth, child.parentSession) == (
        "subagent",
        1,
        family.main.header.id,
    )
    assert family.subagent.events[0].type == "subagent/descriptor"


@pytest.mark.parametrize("encoding", list(Encoding))
def test_target_size_produces_large_logs(tmp_path: Path, encoding: Encoding) -> None:
    draft = build_session(SessionSpec(seed=6, turns=1, target_bytes=400_000, target_events=3000))
    assert len(draft.events) >= 3000
    log = read_session(write_session(tmp_path, draft, encoding=encoding))
    assert log.logical_length >= 400_000 and len(log.events) == len(draft.events)


def test_a_scripted_session_says_exactly_what_it_was_given(tmp_path: Path) -> None:
    tools = (
        ScriptedTool("bash", {"command": "make"}, ToolOutput("no rule", ok=False)),
        ScriptedTool("read_file", {"path": "a.py"}, ToolOutput("x = 1")),
    )
    turns = [ScriptedTurn("Run make.", "make has no rule.", tools), ScriptedTurn("Thanks.", "Welcome.")]
    draft = build_scripted_session(turns, seed=3, cwd="/p")
    log = read_session(write_session(tmp_path, draft))
    assert _records(draft) == _records(build_scripted_session(turns, seed=3, cwd="/p"))
    evidence = project_evidence(log)
    assert [(t.turn, t.user, t.assistant) for t in evidence.turns] == [
        (1, ["Run make."], "make has no rule."),
        (2, ["Thanks."], "Welcome."),
    ]
    assert [(u.name, u.ok) for u in evidence.turns[0].tools] == [("bash", False), ("read_file", True)]
    results = [
        e.data["message"]["content"][0]["content"][0]["text"] for e in log.events if e.type == "tool/result"
    ]
    assert results == ["no rule", "x = 1"], "scripted outputs settle in the order given"


def test_a_scripted_fork_and_subagent_say_exactly_what_they_were_given(tmp_path: Path) -> None:
    main = build_scripted_session([ScriptedTurn("Fix it.", "Fixed.")] * 2, seed=8, cwd="/p")
    fork = fork_session(main, SessionSpec(seed=9), after_turn=1, script=[ScriptedTurn("Other way?", "Sure.")])
    child = subagent_session(
        main, SessionSpec(seed=10), label="grep", script=[ScriptedTurn("Find it.", "Here.")]
    )
    fork_log = read_session(write_session(tmp_path, fork))
    assert fork_log.header.seedLength is not None
    assert [(t.turn, t.user) for t in project_evidence(fork_log).turns][-1] == (2, ["Other way?"])
    child_log = read_session(write_session(tmp_path, child))
    assert child_log.events[0].type == "subagent/descriptor"
    assert [(t.turn, t.user, t.assistant) for t in project_evidence(child_log).turns] == [
        (1, ["Find it."], "Here.")
    ]
