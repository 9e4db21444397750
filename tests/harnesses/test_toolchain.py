"""The real Claude Code and Codex CLIs run here, offline, against the scripted fake models.

What a resumed or forked session sends the model is the harness's own reading of its files:
these tests pin that down, so the format readers and fork writers can be checked against it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import Scenario

pytestmark = pytest.mark.slow


def _texts(request: dict[str, Any], key: str) -> list[str]:
    """Every text the request carries in its conversation (`messages` or `input`), in order."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for field in ("text", "output", "content"):
                if isinstance(node.get(field), str):
                    found.append(node[field])
            for value in node.values():
                if isinstance(value, (dict, list)):
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(request[key])
    return found


def _mentions(texts: list[str], needle: str) -> bool:
    return any(needle in text for text in texts)


class TestClaudeCode:
    def test_a_tool_turn_writes_one_transcript_under_the_projects_folder(
        self, claude_scenario: Scenario
    ) -> None:
        first = claude_scenario.runs["first"]
        assert first.transcript.parent.parent.name == "projects"
        assert first.result["result"] == "notes say alpha"
        # the second model call carries both parallel tool results, read from the temp cwd
        results = _texts(claude_scenario.requests["first"][1], "messages")
        assert _mentions(results, "alpha") and _mentions(results, "beta")

    def test_resume_sends_the_prior_conversation(self, claude_scenario: Scenario) -> None:
        (request,) = claude_scenario.requests["resume"]
        texts = _texts(request, "messages")
        for earlier in ("read the notes", "reading both", "notes say alpha", "and again"):
            assert _mentions(texts, earlier), earlier
        assert claude_scenario.runs["resume"].session_id == claude_scenario.runs["first"].session_id

    def test_fork_session_is_a_new_file_and_leaves_the_parent_alone(self, claude_scenario: Scenario) -> None:
        parent, fork = claude_scenario.runs["first"], claude_scenario.runs["fork"]
        assert fork.session_id != parent.session_id
        assert fork.transcript.parent == parent.transcript.parent
        assert "forked prompt" in fork.transcript.read_text()
        assert "forked prompt" not in parent.transcript.read_text()
        (request,) = claude_scenario.requests["fork"]
        assert _mentions(_texts(request, "messages"), "second answer")

    def test_resume_session_at_drops_what_came_after_the_anchor(self, claude_scenario: Scenario) -> None:
        (request,) = claude_scenario.requests["rewind"]
        texts = _texts(request, "messages")
        assert _mentions(texts, "notes say alpha") and _mentions(texts, "instead this")
        assert not _mentions(texts, "second answer")
        rewind, parent = claude_scenario.runs["rewind"], claude_scenario.runs["first"]
        assert rewind.session_id == parent.session_id  # the branch lives in the same file
        assert "instead this" in parent.transcript.read_text()


class TestCodex:
    def test_a_tool_turn_writes_one_rollout_by_date(self, codex_scenario: Scenario) -> None:
        first = codex_scenario.runs["first"]
        assert first.rollout.parents[3].name == "sessions"
        meta = json.loads(first.rollout.read_text().splitlines()[0])
        assert meta["type"] == "session_meta" and meta["payload"]["id"] == first.session_id
        outputs = _texts(codex_scenario.requests["first"][1], "input")
        assert _mentions(outputs, "alpha") and _mentions(outputs, "beta")

    def test_resume_sends_the_prior_conversation(self, codex_scenario: Scenario) -> None:
        (request,) = codex_scenario.requests["resume"]
        texts = _texts(request, "input")
        for earlier in ("read the notes", "notes say alpha", "and again"):
            assert _mentions(texts, earlier), earlier
        assert codex_scenario.runs["resume"].rollout == codex_scenario.runs["first"].rollout

    def test_fork_is_a_new_rollout_naming_its_parent(self, codex_scenario: Scenario) -> None:
        parent, fork = codex_scenario.runs["first"], codex_scenario.runs["fork"]
        assert fork.session_id != parent.session_id and fork.rollout != parent.rollout
        meta = json.loads(fork.rollout.read_text().splitlines()[0])["payload"]
        assert meta["forked_from_id"] == parent.session_id
        assert "forked prompt" not in parent.rollout.read_text()
        (request,) = codex_scenario.requests["fork"]
        assert _mentions(_texts(request, "input"), "second answer")


class TestClaudeCodeSubagentsAndCompaction:
    def test_a_subagent_writes_its_own_transcript_beside_the_session(
        self, claude_agent_scenario: Scenario
    ) -> None:
        first = claude_agent_scenario.runs["first"]
        (agent,) = (first.transcript.parent / first.session_id / "subagents").glob("agent-*.jsonl")
        assert agent.with_suffix(".meta.json").is_file()
        assert first.result["result"] == "the agent reported back"
        openers = [_texts(request, "messages") for request in claude_agent_scenario.requests["first"]]
        assert sum(_mentions(texts[:3], "say what you see") for texts in openers) == 1

    def test_after_compact_the_model_gets_the_summary_instead_of_the_first_turn(
        self, claude_compact_scenario: Scenario
    ) -> None:
        (request,) = claude_compact_scenario.requests["third"]
        texts = _texts(request, "messages")
        assert _mentions(texts, "SUMMARY: two questions were answered") and _mentions(texts, "third question")
        # Claude Code 2.1.3xx keeps the latest messages verbatim after the summary, not the oldest
        assert not _mentions(texts, "first question") and not _mentions(texts, "first answer")
