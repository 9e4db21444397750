"""Consolidating sessions the real Claude Code and Codex CLIs wrote, through the real runner.

The session (see conftest) is copied into a root of this test's home, its mtime set in the
past so it is finished; the model is the fake server, driven by the real `openai` client,
answering with a proposal that cites the evidence range of the session's first turn.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from claude_agent_sdk import rename_session
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.consolidation.evidence import shown_turns
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator, Refused
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.consolidation import Status
from tests.consolidation.conftest import KEY_ENV, configure, proposal, put
from tests.fake_openai import Computed, FakeOpenAI, tool_call

from .claude import ClaudeRun
from .conftest import Scenario

pytestmark = pytest.mark.slow
OLD = 1_600_000_000


def _settled_copy(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    os.utime(target, (OLD, OLD))
    return target


def _claude_copy(run: ClaudeRun, tmp_path: Path) -> tuple[Path, Path]:
    """A `projects` root of this test, and the run's transcript settled in it, in its folder."""
    root = tmp_path / "claude" / "projects"
    return root, _settled_copy(run.transcript, root / run.transcript.parent.name / run.transcript.name)


def _cite_the_first_turn(body: dict) -> object:
    """A final proposal citing the first turn the evidence shows, exactly as shown."""
    (range_, _), *_ = shown_turns(body["messages"][1]["content"])
    return tool_call(proposal(put("notes-say-alpha", [range_.model_dump()], "The notes say alpha.\n")))


def _consolidate(home: Home, session: str):
    return asyncio.run(Consolidator(home).consolidate(session, lambda *_: None))


def _reviewed(home: Home, session: str, cwd: str) -> tuple[dict, dict]:
    """The session's row in `sessions list --json` and its review in `sessions tree --json`."""

    def rows(*command: str) -> list[dict]:
        out = CliRunner().invoke(cli, ["--home", str(home.root), "sessions", *command, "--json"]).stdout
        return json.loads(out)["sessions" if command[0] == "list" else "nodes"]

    (row,) = [r for r in rows("list") if r["id"] == session]
    (node,) = [n for n in rows("tree", "--cwd", cwd) if n["id"] == session]
    return row, node["review"]


def _sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _run(home: Home, root: Path, copy: Path, session: str, cwd: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeOpenAI(api_key="sk-test") as fake:
        configure(home, fake, root)
        fake.reply(Computed(_cite_the_first_turn))
        result = _consolidate(home, session)
        assert result.status is Status.COMMITTED and result.changes == 1
        sent = json.dumps(fake.requests[0]["messages"][1]["content"])
        assert "read the notes" in sent and "notes say alpha" in sent
        assert "environment_context" not in sent and "AGENTS.md" not in sent and "beta" not in sent
        receipt = ReceiptStore(home).read(result.review)
        assert receipt is not None and receipt.source.session == session
        assert receipt.source.coveredSeq == copy.read_bytes().count(b"\n")
        (change,) = receipt.changes
        (cited,) = change.evidence
        lines = copy.read_bytes().splitlines()
        # the cited lines are the first turn: its prompt, through its answer
        span = [json.loads(line) for line in lines[cited.fromSeq - 1 : cited.toSeq]]
        assert "read the notes" in json.dumps(span) and "notes say alpha" in json.dumps(span)
        assert "and again" not in json.dumps(span)
        # The receipt counts a harness file's lines as lines, not as DSH's events.
        _, text = ReceiptStore(home).read_as_written(result.review)  # type: ignore[misc]
        assert f"(through line {receipt.source.coveredSeq})" in text
        assert f"(evidence: lines {cited.fromSeq}-{cited.toSeq})" in text and "events" not in text
        records = MemoryStore(home).read_workspace(WorkspaceId.from_cwd(cwd)).records
        assert [r.name for r in records] == ["notes-say-alpha"]
        assert _consolidate(home, session) == result and fake.count == 1  # already reviewed
        # The listing hashes the file for its review state only (decision 0340): the digest shown
        # is the receipt's, the bytes' own.
        row, review = _reviewed(home, session, cwd)
        assert row["review"] == review == {"state": "consolidated", "status": None}
        assert row["digest"] == receipt.source.digest == _sha256(copy)
        with copy.open("ab") as handle:  # the harness appends: a new review, refused while live
            handle.write(lines[-1] + b"\n")
        with pytest.raises(Refused) as live:
            _consolidate(home, session)
        assert live.value.code == "LIVE" and fake.count == 1
        row, review = _reviewed(home, session, cwd)
        assert row["review"] == review == {"state": "changed", "status": None}
        assert row["digest"] == _sha256(copy) != receipt.source.digest


def test_a_claude_code_session_is_consolidated_and_cites_its_first_turn(
    home: Home, tmp_path: Path, claude_scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = claude_scenario.runs["first"]
    root, copy = _claude_copy(run, tmp_path)
    _run(home, root, copy, run.session_id, str(claude_scenario.cwd), monkeypatch)


def test_a_codex_session_is_consolidated_and_cites_its_first_turn(
    home: Home, tmp_path: Path, codex_scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = codex_scenario.runs["first"]
    root = tmp_path / "codex" / "sessions"
    copy = _settled_copy(run.rollout, root / "2026" / "05" / "01" / run.rollout.name)
    _run(home, root, copy, run.session_id, str(codex_scenario.cwd), monkeypatch)


def test_a_renamed_claude_code_session_is_not_reviewed_again(
    home: Home, tmp_path: Path, claude_scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = claude_scenario.runs["first"]
    root, copy = _claude_copy(run, tmp_path)
    monkeypatch.setenv(KEY_ENV, "sk-test")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root.parent))
    with FakeOpenAI(api_key="sk-test") as fake:
        configure(home, fake, root)
        fake.reply(Computed(_cite_the_first_turn))
        first = _consolidate(home, run.session_id)
        before = copy.read_bytes()
        # The SDK's own rename, as `/rename` does: one custom-title line, a new digest.
        rename_session(run.session_id, "Notes, renamed", directory=str(claude_scenario.cwd))
        assert copy.read_bytes().startswith(before) and len(copy.read_bytes()) > len(before)
        os.utime(copy, (OLD, OLD))
        again = _consolidate(home, run.session_id)
        assert again.status is Status.NO_CHANGE and again.attempt == 0 and fake.count == 1
        assert again.repeats == first.review != again.review
        receipt = ReceiptStore(home).read(again.review)
        assert receipt is not None and receipt.repeats == first.review
        assert receipt.source.digest == _sha256(copy) and receipt.source.evidence is not None
        assert receipt.source.evidence == ReceiptStore(home).read(first.review).source.evidence  # type: ignore[union-attr]
        row, review = _reviewed(home, run.session_id, str(claude_scenario.cwd))
        assert row["title"] == "Notes, renamed"
        assert row["review"] == review == {"state": "consolidated", "status": None}  # what it repeats
        shown = CliRunner().invoke(cli, ["--home", str(home.root), "consolidate", run.session_id])
        assert f"its evidence is what review {first.review} read, so no model was asked" in shown.stdout


def test_a_codex_fork_that_copied_no_turn_is_reviewed_knowing_where_it_branched(
    home: Home, tmp_path: Path, codex_scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`codex exec fork` copies none of its parent's lines: its evidence was its own turn alone,
    read by the model as a session of its own, the context its prompt followed unsaid."""
    root = tmp_path / "codex" / "sessions"
    for name in ("first", "fork"):
        rollout = codex_scenario.runs[name].rollout
        _settled_copy(rollout, root / rollout.relative_to(rollout.parents[3]))
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeOpenAI(api_key="sk-test") as fake:
        configure(home, fake, root)
        fake.reply(Computed(_cite_the_first_turn))
        result = _consolidate(home, codex_scenario.runs["fork"].session_id)
        assert result.status is Status.COMMITTED
        sent = fake.requests[0]["messages"][1]["content"]
    assert "This session is a branch of another session after that session's turn 2: what came" in sent
    assert "forked prompt" in sent and "read the notes" not in sent and "second answer" not in sent


def test_a_claude_code_fork_session_copy_reviews_the_turns_it_shares_the_tree_places_it_after_them(
    home: Home, tmp_path: Path, claude_scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`claude --resume <parent> --fork-session` copies the parent's records under a new id and
    marks none of them. The tree says it branched after the turns it shares with the parent's
    active conversation; its review still reads them, as what it would leave out depends on the
    parent's file, which the copy's review identity does not cover: a rewind or an archive of
    the parent after the copy's review would have left a turn reviewed by no one (decision 0517).
    The parent was rewound past its second turn, so only the first is shared."""
    parent, copy = claude_scenario.runs["first"], claude_scenario.runs["fork"]
    root, _ = _claude_copy(parent, tmp_path)
    _claude_copy(copy, tmp_path)
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeOpenAI(api_key="sk-test") as fake:
        configure(home, fake, root)
        fake.reply(Computed(_cite_the_first_turn))
        assert _consolidate(home, parent.session_id).status is Status.COMMITTED
        fake.reply(tool_call(proposal()))
        assert _consolidate(home, copy.session_id).status is Status.NO_CHANGE
        # The evidence, before the memory the parent's review wrote ("The notes say alpha.").
        sent = fake.requests[1]["messages"][1]["content"].split("# Global memory now")[0]
    assert "This session is a branch of another session" not in sent
    assert "read the notes" in sent and "notes say alpha" in sent  # the shared turn, reviewed again
    assert "and again" in sent and "forked prompt" in sent
    out = CliRunner().invoke(
        cli, ["--home", str(home.root), "sessions", "tree", "--cwd", str(claude_scenario.cwd), "--json"]
    )
    (node,) = [n for n in json.loads(out.stdout)["nodes"] if n["id"] == copy.session_id]
    assert (node["parent"], node["forkTurn"], node["flags"]) == (parent.session_id, 1, ["inferred"])
