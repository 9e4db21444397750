"""A Claude Code session whose active conversation damage cut off from all its turns is refused.

When the last record's parentUuid loops back to itself with no record stamped within 5 s before
it to go on from (as Claude Code goes on, decision 0416), or names a record not in the file, the
active conversation is that record alone: it holds no turn, and the turns before the cut are
only a branch before the first turn (decision 0302). A `no-change` would be a verdict on turns
the model was never shown, bound to the file's bytes for good, so the session is refused
`CUT_OFF`, naming the line and the turns, with no model call and no receipt (decision 0368).
Once the file is repaired it is reviewed. A session with nothing to learn anywhere is still
`no-change` without a model call, and a cut with turns after it reviews those turns.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator, Refused
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import ConsolidationResult, Status
from tests.fake_openai import FakeOpenAI, tool_call
from tests.sessions import claude_lines as cl
from tests.sessions.harness_roots import claude_project, write

from .conftest import configure, proposal

TALK = [
    cl.prompt("u1", None, "always run the tests with uv"),
    cl.say("a1", "u1", "noted"),
    cl.prompt("u2", "a1", "and format with ruff"),
]


def _session(home: Home, fake: FakeOpenAI, tmp_path: Path, *records: dict[str, Any]) -> Path:
    claude = tmp_path / "claude"
    configure(home, fake, tmp_path / "dsh", (claude, "claude-code"), timeout_seconds=20)
    return write(claude_project(claude) / f"{cl.SID}.jsonl", cl.jsonl(*records))


def consolidate(home: Home) -> ConsolidationResult:
    return asyncio.run(Consolidator(home).consolidate(cl.SID, lambda phase, data: None))


@pytest.mark.parametrize(
    ("parent", "damage"),
    [("a2", "its parentUuid chain loops back to it"), ("gone", "its parent gone is not in the file")],
    ids=["self-loop", "missing-parent"],
)
def test_a_conversation_cut_off_from_all_its_turns_is_refused_until_repaired(
    home: Home, fake: FakeOpenAI, tmp_path: Path, parent: str, damage: str
) -> None:
    later = "2026-01-01T00:00:30Z"  # past the 5 s within which Claude Code goes on from a loop
    path = _session(home, fake, tmp_path, *TALK, cl.say("a2", parent, "done", timestamp=later))
    fake.reply(tool_call(proposal()))
    with pytest.raises(Refused) as refused:
        consolidate(home)
    assert refused.value.code == "CUT_OFF"
    message = refused.value.message
    assert "active conversation holds no turns" in message and "the 2 turns before it" in message
    assert f"(the record at line 4: {damage})" in message
    assert f"repair {path} so that the record at line 4 leads back" in message
    assert fake.count == 0, "the model was asked nothing"
    assert ReceiptStore(home).all() == [], "no receipt claims the file was reviewed"
    write(path, cl.jsonl(*TALK, cl.say("a2", "u2", "done")))  # repaired: the answer hangs from u2
    assert consolidate(home).status is Status.NO_CHANGE
    assert fake.count == 1, "the repaired session is reviewed by the model"
    shown = str(fake.requests[0]["messages"])
    assert "always run the tests with uv" in shown and "and format with ruff" in shown


def test_a_session_with_no_turn_anywhere_is_still_no_change_without_the_model(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    _session(home, fake, tmp_path, cl.say("a1", None, "hello"), cl.say("a2", "gone", "anyone?"))
    result = consolidate(home)
    assert (result.status, result.attempt, fake.count) == (Status.NO_CHANGE, 0, 0)


def test_a_cut_with_turns_after_it_reviews_those_turns(home: Home, fake: FakeOpenAI, tmp_path: Path) -> None:
    _session(
        home,
        fake,
        tmp_path,
        *TALK[:2],
        cl.prompt("u2", "gone", "and format with ruff"),
        cl.say("a2", "u2", "ok"),
    )
    fake.reply(tool_call(proposal()))
    assert consolidate(home).status is Status.NO_CHANGE
    assert fake.count == 1
    assert "and format with ruff" in str(fake.requests[0]["messages"])
