"""The format readers on sessions the real Claude Code and Codex CLIs wrote (see conftest).

Each expectation is something the harness itself showed it believes: the model requests it
sent on resume, fork and rewind (checked in test_toolchain) say what the conversation is.
"""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from remem.daemon.sessions.formats.claude_code import read_transcript
from remem.daemon.sessions.formats.codex import read_rollout

from .conftest import Scenario

pytestmark = pytest.mark.slow


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


class TestClaudeCode:
    def test_the_active_conversation_follows_the_rewind(self, claude_scenario: Scenario) -> None:
        path = claude_scenario.runs["first"].transcript
        t = read_transcript(path.read_bytes(), path.name)
        assert t.error is None and t.problems == ()
        assert (t.session_id, t.cwd, t.title) == (
            claude_scenario.runs["first"].session_id,
            str(claude_scenario.cwd),
            "read the notes",
        )
        # --resume-session-at the first answer: what the harness sent the model next
        assert [(turn.prompt, turn.answer) for turn in t.turns] == [
            ("read the notes", "notes say alpha"),
            ("instead this", "rewound answer"),
        ]
        assert all(turn.status == "completed" and turn.forkable for turn in t.turns)

    def test_the_abandoned_path_is_an_in_file_branch_after_the_first_turn(
        self, claude_scenario: Scenario
    ) -> None:
        path = claude_scenario.runs["first"].transcript
        t = read_transcript(path.read_bytes(), path.name)
        (branch,) = t.branches
        assert branch.after_turn == 1
        assert [(turn.index, turn.prompt, turn.answer) for turn in branch.turns] == [
            (2, "and again", "second answer")
        ]

    def test_parallel_reads_are_two_tools_of_the_first_turn(self, claude_scenario: Scenario) -> None:
        path = claude_scenario.runs["first"].transcript
        first = read_transcript(path.read_bytes(), path.name).turns[0]
        assert [(tool.name, tool.ok) for tool in first.tools] == [("Read", True), ("Read", True)]
        assert first.key and first.start < first.end

    def test_a_fork_session_copy_shares_the_parents_root_but_names_no_parent(
        self, claude_scenario: Scenario
    ) -> None:
        parent_path, fork_path = (
            claude_scenario.runs["first"].transcript,
            claude_scenario.runs["fork"].transcript,
        )
        parent = read_transcript(parent_path.read_bytes(), parent_path.name)
        fork = read_transcript(fork_path.read_bytes(), fork_path.name)
        assert [turn.prompt for turn in fork.turns] == ["read the notes", "and again", "forked prompt"]
        assert fork.root == parent.root and fork.lineage == ()  # Claude Code writes no marker
        assert fork.session_id == claude_scenario.runs["fork"].session_id
        # The copied records keep the parent's times; the copy is dated by its own first line.
        copied = [json.loads(line) for line in fork_path.read_bytes().splitlines()]
        theirs = {json.loads(line).get("uuid") for line in parent_path.read_bytes().splitlines()} - {None}
        last_copied = max(_time(r["timestamp"]) for r in copied if r.get("uuid") in theirs)
        assert fork.created_at is not None and _time(fork.created_at) > last_copied


class TestCodex:
    def test_turns_tools_and_identity_of_a_resumed_rollout(self, codex_scenario: Scenario) -> None:
        run = codex_scenario.runs["first"]
        r = read_rollout(run.rollout.read_bytes())
        assert (r.session_id, r.cwd, r.source, r.error, r.problems) == (
            run.session_id,
            str(codex_scenario.cwd),
            "exec",
            None,
            (),
        )
        assert [(turn.prompt, turn.answer, turn.status, turn.forkable) for turn in r.turns] == [
            ("read the notes", "notes say alpha", "completed", True),
            ("and again", "second answer", "completed", True),
        ]
        assert [tool.name for tool in r.turns[0].tools] == ["exec_command", "exec_command"]
        assert all(tool.ok is True for tool in r.turns[0].tools)

    def test_a_fork_names_its_parent_and_the_inherited_history(self, codex_scenario: Scenario) -> None:
        parent, fork = codex_scenario.runs["first"], codex_scenario.runs["fork"]
        r = read_rollout(fork.rollout.read_bytes())
        kinds = {edge.kind: edge for edge in r.lineage}
        assert kinds["fork"].parent == parent.session_id
        assert kinds["history"].parent == parent.session_id and kinds["history"].upto
        assert [turn.prompt for turn in r.turns] == ["forked prompt"]


class TestClaudeCodeSubagentsAndCompaction:
    def test_the_subagent_file_names_its_parent_and_the_notification_is_no_prompt(
        self, claude_agent_scenario: Scenario
    ) -> None:
        first = claude_agent_scenario.runs["first"]
        parent = read_transcript(first.transcript.read_bytes(), first.transcript.name)
        assert [(t.prompt, t.answer, [tool.name for tool in t.tools]) for t in parent.turns] == [
            ("use an agent", "the agent reported back", ["Agent"])
        ]
        (path,) = (first.transcript.parent / first.session_id / "subagents").glob("agent-*.jsonl")
        agent = read_transcript(path.read_bytes(), path.name)
        assert (agent.subagent, agent.parent_session, f"agent-{agent.agent_id}") == (
            True,
            first.session_id,
            path.stem,
        )
        assert [(t.prompt, t.answer) for t in agent.turns] == [("say what you see", "agent saw things")]

    def test_compaction_segments_join_and_keep_every_turn(self, claude_compact_scenario: Scenario) -> None:
        path = claude_compact_scenario.runs["first"].transcript
        t = read_transcript(path.read_bytes(), path.name)
        assert [turn.prompt for turn in t.turns] == [
            "first question",
            "second question",
            "/compact",
            "third question",
        ]
        assert t.segments == 1 and sum(turn.compacted for turn in t.turns) == 1 and t.problems == ()
        assert all(turn.forkable for turn in t.turns)
