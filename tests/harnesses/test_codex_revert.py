"""A Codex thread that `thread/revert` rotated to new rollouts, as the real Codex 0.163 wrote it.

Codex's rewind keeps the thread id and goes on in a new rollout,
``rollout-<ts>-<thread>_<rollout>.jsonl``, whose ``session_meta`` names the rollout and ordinal
it continues from (``history_base``); the older rollout is left as it was, reverted turns
included. remem must list the thread once, with the turns Codex resumes it with, and a fork of
it must be a rollout `codex exec resume` continues with exactly that history (decision 0366).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.consolidation.harness_source import observe
from remem.daemon.home import Home
from remem.daemon.sessions import harness_sources
from remem.daemon.sessions.catalog import SessionCatalog

from .codex import Codex
from .fake_responses import FakeResponses, text
from .requests import comparable

pytestmark = pytest.mark.slow


@dataclass
class Reverted:
    """One thread: q1, q2, q3; reverted before q3; q3b, q4; reverted before q4; q4b."""

    cx: Codex
    fake: FakeResponses
    session_id: str
    sent: dict[str, list[Any]]  # the model's input for each prompt
    just_reverted: Path  # the sessions folder right after the first revert, before any prompt


@pytest.fixture(scope="module")
def reverted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reverted]:
    with FakeResponses() as fake:
        cx = Codex(tmp_path_factory.mktemp("codex-revert"), fake)
        sent: dict[str, list[Any]] = {}

        def ask(prompt: str, session: str | None = None) -> str:
            fake.reply(text(prompt.replace("question", "answer")))
            run = cx.exec(prompt) if session is None else cx.exec("resume", session, prompt)
            sent[prompt] = fake.requests[-1]["input"]
            return run.session_id

        session = ask("question 1")
        ask("question 2", session)
        ask("question 3", session)
        cx.revert(session, cx.turn_ids(session)[2])
        just_reverted = Path(shutil.copytree(cx.sessions, cx.codex_home.parent / "just-reverted"))
        ask("question 3b", session)
        ask("question 4", session)
        cx.revert(session, cx.turn_ids(session)[-1])
        ask("question 4b", session)
        yield Reverted(cx, fake, session, sent, just_reverted)


def sessions(home: Home, root: Path, *args: str) -> Any:
    done = CliRunner().invoke(
        cli, ["--home", str(home.root), "sessions", *args, "--root", str(root), "--json"]
    )
    return json.loads(done.output)


def rollouts(root: Path, session: str) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted(root.glob(f"*/*/*/rollout-*-{session}*.jsonl"))}


def test_a_reverted_codex_thread_lists_once_with_the_history_codex_resumes(
    home: Home, reverted: Reverted
) -> None:
    root, session = reverted.cx.sessions, reverted.session_id
    assert len(rollouts(root, session)) == 3  # the first, and one per revert
    listing = sessions(home, root, "list")
    assert listing["errors"] == []
    (listed,) = [s for s in listing["sessions"] if s["id"] == session]
    assert (listed["turns"], listed["title"], listed["parent"], listed["problems"]) == (
        4,
        "question 1",
        None,
        0,
    )
    turns = sessions(home, root, "turns", session)["turns"]
    assert [(t["user"], t["status"], t["forkable"]) for t in turns] == [
        (prompt, "completed", True) for prompt in ("question 1", "question 2", "question 3b", "question 4b")
    ]
    tree = sessions(home, root, "tree", "--cwd", str(reverted.cx.cwd))
    nodes = {n["id"]: n for n in tree["nodes"]}
    assert list(nodes) == [session] and nodes[session]["parent"] is None
    shown = CliRunner().invoke(
        cli, ["--home", str(home.root), "sessions", "show", session, "--root", str(root)]
    )
    assert "question 4b" in shown.output and "question 3b" in shown.output
    assert "question 3\n" not in shown.output and "answer 4\n" not in shown.output


def test_right_after_a_revert_the_reverted_turn_is_no_longer_offered(home: Home, reverted: Reverted) -> None:
    """Codex writes the new rollout at the revert, before any prompt: the reverted turn is gone."""
    listing = sessions(home, reverted.just_reverted, "list")
    assert listing["errors"] == [] and [s["id"] for s in listing["sessions"]] == [reverted.session_id]
    turns = sessions(home, reverted.just_reverted, "turns", reverted.session_id)["turns"]
    assert [(t["user"], t["forkable"]) for t in turns] == [("question 1", True), ("question 2", True)]


@pytest.mark.parametrize(("after", "next_prompt"), [(3, "question 4b"), (1, "question 2")])
def test_codex_resumes_a_remem_fork_of_a_reverted_thread_with_exactly_its_history(
    home: Home, reverted: Reverted, after: int, next_prompt: str
) -> None:
    """A fork after a turn of the newest rollout, or of the history it inherits, is a legacy
    rollout standing alone: `codex exec resume` sends what the thread sent before its next turn."""
    cx, root, session = reverted.cx, reverted.cx.sessions, reverted.session_id
    before = rollouts(root, session)
    turns = sessions(home, root, "turns", session)["turns"]
    at = str(turns[after - 1]["endSeq"])
    done = sessions(home, root, "fork", session, "--at", at, "--op-id", f"op-revert-{after}")
    assert done["forkTurn"] == after
    reverted.fake.reply(text("child answer"))
    child = cx.exec("resume", done["child"], "child question")
    sent = reverted.fake.requests[-1]["input"]
    assert child.session_id == done["child"]
    assert comparable(sent, "child question") == comparable(reverted.sent[next_prompt], next_prompt)
    assert 'question 3"' not in json.dumps(sent) and 'answer 4"' not in json.dumps(sent)
    assert rollouts(root, session) == before  # the thread's rollouts are only read


def test_a_reverted_thread_is_reviewed_by_its_history_at_the_digest_the_listing_states(
    home: Home, reverted: Reverted
) -> None:
    """Consolidation reads the same joined history the catalog hashes: its line ranges and its
    digest name the same bytes however often they are read again."""
    catalog = SessionCatalog(home, [reverted.cx.sessions], idle_seconds=0)
    entry = catalog.find(reverted.session_id)
    read = observe("codex", entry.path, idle_seconds=0)
    assert read.session_id == reverted.session_id and read.digest == catalog.digest_of(entry)
    evidence = read.evidence()
    assert [turn.user for turn in evidence.turns] == [
        ["question 1"],
        ["question 2"],
        ["question 3b"],
        ["question 4b"],
    ]
    lines = read.data.splitlines()
    for turn in evidence.turns:
        cited = b"\n".join(lines[turn.range.fromSeq - 1 : turn.range.toSeq])
        assert turn.user[0].encode() in cited


def test_a_codex_compaction_turn_is_labelled_as_the_command_that_made_it(home: Home, tmp_path: Path) -> None:
    with FakeResponses() as fake:
        cx = Codex(tmp_path, fake)
        fake.reply(text("answer 1"))
        session = cx.exec("question 1").session_id
        fake.reply(*[text("SUMMARY: compacted")] * 3)
        cx.app_server(
            ("thread/resume", {"threadId": session}),
            ("thread/compact/start", {"threadId": session}),
            until="turn/completed",
        )
        fake.drop_script()
        fake.reply(text("answer 2"))
        cx.exec("resume", session, "question 2")
    turns = sessions(home, cx.sessions, "turns", session)["turns"]
    assert [t["user"] for t in turns] == ["question 1", "/compact", "question 2"]
    (listed,) = sessions(home, cx.sessions, "list")["sessions"]
    assert listed["title"] == "question 1"


def test_a_base_rollouts_folder_swapped_for_a_link_after_the_scan_is_not_read(
    reverted: Reverted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rollouts a rotated one continues are found by a scan, then read: a date folder
    swapped for a link in between is refused, never followed out of the root (decision 0364)."""
    root = Path(shutil.copytree(reverted.cx.sessions, tmp_path / "sessions"))
    *_, current = sorted(rollouts(root, reverted.session_id), key=lambda p: p.name)
    folder, outside = current.parent, tmp_path / "outside"
    outside.mkdir()
    for path in folder.iterdir():  # the same names, a marker of the same length in the prompts
        (outside / path.name).write_bytes(path.read_bytes().replace(b"question 1", b"MARKER_Q01"))
    scan = harness_sources._ThreadRollouts._scan

    def scan_then_swap(self: Any) -> Any:
        found = scan(self)
        folder.rename(folder.with_name(folder.name + ".real"))
        folder.symlink_to(outside, target_is_directory=True)
        return found

    monkeypatch.setattr(harness_sources._ThreadRollouts, "_scan", scan_then_swap)
    history, unjoined = harness_sources.codex_history(current, current.read_bytes())
    assert b"MARKER_Q01" not in history
    assert unjoined is not None
