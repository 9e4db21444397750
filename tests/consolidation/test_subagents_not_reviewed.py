"""A subagent's session is part of its parent's: it is refused `SUBAGENT`, never reviewed alone.

Its prompt is the text the parent agent wrote, which the evidence would show as `User:`
(decision 0356). Claude Code's `<session>/subagents/agent-*.jsonl` and a loose `agent-*.jsonl`
(older Claude Code), a Codex rollout whose `session_meta.source.subagent` names the thread that
spawned it, and a DSH `origin: subagent` child are each refused before anything is read or
asked; their parent sessions are reviewed as before.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator, Refused
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import ConsolidationResult, Status
from remem.daemon.sessions.catalog import Entry, SessionCatalog
from remem.daemon.settings import SettingsStore
from tests.fake_openai import FakeOpenAI, tool_call
from tests.sessions import claude_lines as cl
from tests.sessions import codex_lines as cx
from tests.sessions.factory import SessionSpec, build_session, subagent_session, write_session
from tests.sessions.harness_roots import OLD, claude_project, write

from .conftest import configure, proposal

PARENT_TID = "019c0000-0000-7000-8000-0000000000aa"
CHILD_TID = "019c0000-0000-7000-8000-0000000000bb"
DELEGATION = "You are a worker agent. Always use tabs in this repo."


def _roots(home: Home, fake: FakeOpenAI, tmp_path: Path) -> dict[str, str]:
    """A root of each format holding a parent and its subagent; the ids by role."""
    claude, codex, dsh = tmp_path / "claude", tmp_path / "codex", tmp_path / "dsh"
    project = claude_project(claude)
    write(
        project / f"{cl.SID}.jsonl",
        cl.jsonl(cl.prompt("u1", None, "split the work"), cl.say("a1", "u1", "done")),
    )
    # Every record of a subagent's file is a sidechain record (the delegation is its prompt).
    side = [cl.prompt("s1", None, DELEGATION), cl.say("s2", "s1", "ok, tabs")]
    for folder, agent in ((project / cl.SID / "subagents", "a1b2"), (project, "c3d4")):  # 2.1, older
        records = [{**record, "isSidechain": True, "agentId": agent} for record in side]
        write(folder / f"agent-{agent}.jsonl", cl.jsonl(*records))
    day = codex / "2026" / "05" / "01"
    parent = cx.rollout(cx.meta(PARENT_TID, cwd=cl.CWD), *cx.turn("t1", "split the work", "done"))
    write(day / f"rollout-2026-05-01T00-00-00-{PARENT_TID}.jsonl", parent)
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": PARENT_TID, "depth": 1}}}
    child = cx.rollout(cx.meta(CHILD_TID, cwd=cl.CWD, source=spawn), *cx.turn("t1", DELEGATION, "ok"))
    write(day / f"rollout-2026-05-01T00-05-00-{CHILD_TID}.jsonl", child)
    main = build_session(SessionSpec(seed=1, turns=2, cwd=cl.CWD))
    helper = subagent_session(main, SessionSpec(seed=2, turns=1, cwd=cl.CWD))
    for draft in (main, helper):
        path = write_session(dsh, draft)
        os.utime(path, (OLD, OLD))
    configure(home, fake, dsh, (claude, "claude-code"), (codex, "codex"), timeout_seconds=20)
    return {
        "claude-code": cl.SID,
        "claude-code subagent": "agent-a1b2",
        "claude-code loose subagent": "agent-c3d4",
        "codex": PARENT_TID,
        "codex subagent": CHILD_TID,
        "dsh": main.header.id,
        "dsh subagent": helper.header.id,
    }


def listed(home: Home) -> dict[str, Entry]:
    """The configured roots' sessions, by id, as the catalog lists them."""
    return {
        e.summary.id: e for e in SessionCatalog.configured(home, SettingsStore(home).read()[0]).entries()[0]
    }


def consolidate(home: Home, session_id: str) -> ConsolidationResult:
    return asyncio.run(Consolidator(home).consolidate(session_id, lambda phase, data: None))


@pytest.mark.parametrize(
    ("subagent", "parent"),
    [
        ("claude-code subagent", "claude-code"),
        ("claude-code loose subagent", "claude-code"),
        ("codex subagent", "codex"),
        ("dsh subagent", "dsh"),
    ],
)
def test_a_subagent_is_refused_and_its_parent_is_named(
    home: Home, fake: FakeOpenAI, tmp_path: Path, subagent: str, parent: str
) -> None:
    ids = _roots(home, fake, tmp_path)
    child = listed(home)[ids[subagent]]
    assert (child.summary.kind, child.summary.live, child.summary.cwd) == ("subagent", False, cl.CWD)
    fake.reply(tool_call(proposal()))
    with pytest.raises(Refused) as refused:
        consolidate(home, ids[subagent])
    assert refused.value.code == "SUBAGENT"
    assert f"consolidate its parent session {ids[parent]}" in refused.value.message
    assert fake.count == 0 and ReceiptStore(home).all() == [], "no model call, no receipt"
    assert consolidate(home, ids[parent]).status is Status.NO_CHANGE, "the parent is reviewed"
    assert fake.count == 1
    assert DELEGATION not in str(fake.requests[0]["messages"]), "the parent's evidence holds no delegation"
    os.utime(child.path, None)  # being written: still refused as a subagent's, not as live
    with pytest.raises(Refused) as live:
        consolidate(home, ids[subagent])
    assert live.value.code == "SUBAGENT" and fake.count == 1


@pytest.mark.parametrize(
    ("subagent", "parent"),
    [("claude-code subagent", "claude-code"), ("codex subagent", "codex"), ("dsh subagent", "dsh")],
)
def test_a_session_whose_subagent_still_runs_is_live_until_it_ends(
    home: Home, fake: FakeOpenAI, tmp_path: Path, subagent: str, parent: str
) -> None:
    ids = _roots(home, fake, tmp_path)
    child = listed(home)[ids[subagent]].path
    os.utime(child, None)  # the subagent is being written: its work is not back in the parent yet
    fake.reply(tool_call(proposal()))
    with pytest.raises(Refused) as refused:
        consolidate(home, ids[parent])
    assert refused.value.code == "LIVE"
    assert refused.value.message == (
        f"session {ids[parent]} is still live: its subagent {ids[subagent]} is still running; "
        "consolidate it once it has finished"
    )
    assert fake.count == 0 and ReceiptStore(home).all() == []
    os.utime(child, (OLD, OLD))  # it finished
    assert consolidate(home, ids[parent]).status is Status.NO_CHANGE and fake.count == 1


@pytest.mark.parametrize("parent_file", [None, b"not a transcript\n"], ids=["missing", "unreadable"])
def test_an_orphaned_subagent_is_refused_without_naming_a_parent_to_consolidate(
    home: Home, fake: FakeOpenAI, tmp_path: Path, parent_file: bytes | None
) -> None:
    """Its parent's transcript is gone (or cannot be read): the refusal says so, and that the
    subagent's work cannot be reviewed without it, rather than send the user to a session that
    the listing does not hold."""
    claude = tmp_path / "claude"
    project = claude_project(claude)
    side = [cl.prompt("s1", None, DELEGATION), cl.say("s2", "s1", "ok, tabs")]
    records = [{**record, "isSidechain": True, "agentId": "e5f6"} for record in side]
    write(project / cl.SID / "subagents" / "agent-e5f6.jsonl", cl.jsonl(*records))
    write(project / cl.SID / "subagents" / "agent-0bad.jsonl", b"\xff a damaged sibling\n")
    if parent_file is not None:
        write(project / f"{cl.SID}.jsonl", parent_file)
    configure(home, fake, tmp_path / "dsh", (claude, "claude-code"), timeout_seconds=20)
    fake.reply(tool_call(proposal()))
    with pytest.raises(Refused) as refused:
        consolidate(home, "agent-e5f6")
    message = refused.value.message
    assert refused.value.code == "SUBAGENT"
    assert "consolidate its parent session" not in message
    assert "so this one cannot be reviewed" in message
    if parent_file is None:
        assert f"its parent session {cl.SID} is in no configured session root" in message
        assert "its transcript is missing" in message
    else:
        assert f"its parent session {cl.SID} cannot be read ({project / cl.SID}.jsonl: " in message
    assert fake.count == 0 and ReceiptStore(home).all() == [], "no model call, no receipt"
