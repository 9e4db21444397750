"""Evidence of Claude Code transcripts and Codex rollouts: what enters the model, at which address."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from remem.daemon.consolidation.evidence import SUMMARY_LABEL
from remem.daemon.consolidation.harness_evidence import project_harness
from remem.daemon.consolidation.harness_source import Unreadable, observe
from remem.daemon.consolidation.proposal import Frozen, ProposalRejected, parse_arguments, plan_proposal
from remem.daemon.protocol.consolidation import EvidenceRange
from remem.daemon.sessions.harness_sources import content_digest
from tests.sessions import claude_lines as cl
from tests.sessions import codex_lines as cx

SECRET = "sk-ant-api03-" + "A" * 90


def claude(*records) -> bytes:
    return cl.jsonl(*records)


def test_claude_code_evidence_keeps_prompts_answers_and_tool_outcomes_only() -> None:
    data = claude(
        cl.prompt("u1", None, f"use the key {SECRET} to deploy"),
        cl.prompt("m1", "u1", "<system-reminder>injected</system-reminder>", isMeta=True),
        cl.use("t1", "m1", "c1", name="Bash"),
        cl.result("r1", "t1", "c1", error=True),
        cl.use("t2", "r1", "c2", name="Read"),
        cl.result("r2", "t2", "c2"),
        cl.say("a1", "r2", "thinking out loud"),
        cl.say("a2", "a1", "deployed"),
        cl.prompt("k1", "a2", "<command-name>/review</command-name>\n<command-args>main</command-args>"),
        cl.prompt("o1", "k1", "<local-command-stdout>reviewed</local-command-stdout>"),
    )
    evidence = project_harness("claude-code", f"{cl.SID}.jsonl", data)
    first, second = evidence.turns
    assert first.range == EvidenceRange(fromSeq=1, toSeq=8)  # the prompt's line to the answer's
    assert first.user == ["use the key [redacted api-key] to deploy"]
    assert first.assistant == "deployed" and first.summaries == []
    assert [(tool.name, tool.ok) for tool in first.tools] == [("Bash", False), ("Read", True)]
    assert (second.user, second.assistant, second.range) == (
        ["/review main"],
        None,
        EvidenceRange(fromSeq=9, toSeq=10),
    )
    rendered = evidence.render()
    assert "injected" not in rendered and "reviewed" not in rendered and SECRET not in rendered
    assert "## Turn 1 (evidence 1-8)" in rendered and "Tools: Bash error, Read ok" in rendered
    assert evidence.sourceEvents == 10


def test_claude_code_evidence_starts_at_the_latest_compaction_with_its_summary_marked() -> None:
    # As Claude Code 2.1 writes /compact: the boundary and its summary, then the command line.
    data = claude(
        cl.prompt("u1", None, "before compaction"),
        cl.say("a1", "u1", "old answer"),
        cl.rec("system", "b1", None, subtype="compact_boundary", logicalParentUuid="a1"),
        cl.prompt("s1", "b1", "Summary: the user asked before", isCompactSummary=True),
        cl.prompt("k1", "s1", "<command-name>/compact</command-name>"),
        cl.prompt("o1", "k1", "<local-command-stdout>Compacted</local-command-stdout>"),
        cl.prompt("u2", "o1", "after compaction"),
        cl.say("a2", "u2", "new answer"),
    )
    evidence = project_harness("claude-code", f"{cl.SID}.jsonl", data)
    assert [(t.turn, t.user, t.summaries, t.assistant) for t in evidence.turns] == [
        (1, [], ["Summary: the user asked before"], None),  # the compacted turn: its summary only
        (2, ["/compact"], [], None),
        (3, ["after compaction"], [], "new answer"),
    ]
    rendered = evidence.render()
    assert f"{SUMMARY_LABEL}\n> Summary: the user asked before" in rendered and "old answer" not in rendered


def test_claude_code_evidence_follows_the_active_conversation_not_abandoned_branches() -> None:
    data = claude(
        cl.prompt("u1", None, "first"),
        cl.say("a1", "u1", "one"),
        cl.prompt("u2", "a1", "abandoned ask"),
        cl.say("a2", "u2", "abandoned answer"),
        cl.prompt("u3", "a1", "instead this"),
        cl.say("a3", "u3", "kept answer"),
    )
    evidence = project_harness("claude-code", f"{cl.SID}.jsonl", data)
    assert [(t.user, t.range) for t in evidence.turns] == [
        (["first"], EvidenceRange(fromSeq=1, toSeq=2)),
        (["instead this"], EvidenceRange(fromSeq=5, toSeq=6)),
    ]
    assert "abandoned" not in evidence.render()


def test_codex_evidence_leaves_out_injected_context_rolled_back_and_compacted_turns() -> None:
    data = cx.rollout(
        cx.meta(),
        *cx.turn("t1", "old ask", "old answer"),
        cx.line("compacted", message=f"summary of the old ask, token {SECRET}"),
        *cx.turn(
            "t2",
            "read it",
            "it says alpha",
            cx.message("user", "# AGENTS.md instructions for /w\n\nbe brief"),
            cx.call("c1"),
            cx.output("c1"),
            cx.event("exec_command_end", call_id="c1", exit_code=2),
            cx.call("c2", name="apply_patch"),
            cx.output("c2"),
            cx.call("c3", name="update_plan"),
            cx.output("c3"),
            cx.event("user_message", message="read it"),  # Codex's echo of the prompt: not twice
        ),
        *cx.turn("t3", "a mistake", "undone"),
        cx.event("thread_rolled_back", num_turns=1),
    )
    (only,) = project_harness("codex", "rollout.jsonl", data).turns
    assert (only.turn, only.user, only.assistant) == (2, ["read it"], "it says alpha")
    assert only.summaries == ["summary of the old ask, token [redacted api-key]"]
    assert [(tool.name, tool.ok) for tool in only.tools] == [
        ("exec_command", False),
        ("apply_patch", True),
        ("update_plan", True),
    ]
    assert (only.range.fromSeq, only.range.toSeq) == (7, 21)  # the compacted line .. task_complete


def test_codex_evidence_of_a_rollout_with_only_user_message_events_uses_them() -> None:
    data = cx.rollout(
        cx.meta(),
        cx.event("user_message", message="<environment_context>x</environment_context>"),
        cx.event("user_message", message="plain ask"),
        cx.message("assistant", "plain answer"),
    )
    (only,) = project_harness("codex", "rollout.jsonl", data).turns
    assert (only.user, only.assistant, only.range) == (
        ["plain ask"],
        "plain answer",
        EvidenceRange(fromSeq=3, toSeq=4),
    )


def test_a_remote_compaction_without_a_message_carries_the_user_messages_it_kept() -> None:
    kept = [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "<environment_context>x</environment_context>"}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "the first ask"}]},
        {"type": "compaction", "encrypted_content": "opaque"},
    ]
    data = cx.rollout(
        cx.meta(), *cx.turn("t1", "q1", "a1"), cx.line("compacted", message="", replacement_history=kept),
        *cx.turn("t2", "q2", "a2"),
    )  # fmt: skip
    (only,) = project_harness("codex", "rollout.jsonl", data).turns
    assert (only.user, only.summaries) == (["q2"], ["the first ask"])


def test_a_compaction_with_a_summary_carries_the_user_messages_it_kept_before_it() -> None:
    summary = "Another language model produced a summary: the user deploys with make ship."
    kept = [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "<environment_context>x</environment_context>"}],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "we deploy with make ship"}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]},
    ]
    compacted = cx.line("compacted", message=summary, replacement_history=kept)
    data = cx.rollout(cx.meta(), *cx.turn("t1", "q1", "a1"), compacted, *cx.turn("t2", "q2", "a2"))
    (only,) = project_harness("codex", "rollout.jsonl", data).turns
    assert (only.user, only.summaries) == (["q2"], ["we deploy with make ship", summary])


def test_a_proposal_may_cite_only_a_turn_of_the_harness_session() -> None:
    data = claude(
        cl.prompt("u1", None, "x"),
        cl.say("a1", "u1", "y"),
        cl.prompt("u2", "a1", "z"),
        cl.say("a2", "u2", "w"),
    )
    ranges = project_harness("claude-code", f"{cl.SID}.jsonl", data).ranges()
    assert ranges == [EvidenceRange(fromSeq=1, toSeq=2), EvidenceRange(fromSeq=3, toSeq=4)]
    frozen = Frozen(b"", {})

    def propose(start: int, end: int) -> str:
        record = {"name": "n", "description": "d", "type": "project", "content": "c"}
        change = {"action": "put", "record": record, "evidence": [{"fromSeq": start, "toSeq": end}]}
        return json.dumps({"final": True, "outcome": "changes", "changes": [change]})

    assert plan_proposal(parse_arguments(propose(3, 4)), ranges, frozen).changed
    for start, end in ((1, 4), (2, 2), (3, 3)):  # spanning turns, inside one, not a whole turn
        with pytest.raises(ProposalRejected, match=f"evidence {start}-{end} is not one of the turn ranges"):
            plan_proposal(parse_arguments(propose(start, end)), ranges, frozen)


def test_an_observation_reads_identity_digest_and_liveness_from_the_file(tmp_path: Path) -> None:
    data = claude(cl.prompt("u1", None, "x"), cl.say("a1", "u1", "y"))
    path = tmp_path / f"{cl.SID}.jsonl"
    path.write_bytes(data)
    fresh = observe("claude-code", path, idle_seconds=120)
    assert (fresh.session_id, fresh.cwd, fresh.digest, fresh.lines, fresh.live) == (
        cl.SID, cl.CWD, content_digest(data), 2, True,
    )  # fmt: skip
    os.utime(path, (1_600_000_000, 1_600_000_000))
    settled = observe("claude-code", path, idle_seconds=120)
    assert not settled.live and fresh.same_as(settled) and settled.same_as(settled)
    path.write_bytes(data + claude(cl.prompt("u2", "a1", "more")))
    os.utime(path, (1_600_000_000, 1_600_000_000))
    assert not settled.same_as(observe("claude-code", path, idle_seconds=120))
    # A file stamped a year ahead (a clock stepped back) is not live until then (decision 0441).
    ahead = time.time() + 365 * 86_400
    os.utime(path, (ahead, ahead))
    assert not observe("claude-code", path, idle_seconds=120).live


def test_an_observation_refuses_a_link_a_missing_file_and_a_file_without_a_session(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_bytes(cx.rollout(cx.meta()))
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    with pytest.raises(Unreadable, match="cannot be opened"):
        observe("codex", link, 120)
    with pytest.raises(Unreadable, match="cannot be opened"):
        observe("codex", tmp_path / "gone.jsonl", 120)
    real.write_bytes(b"not a rollout\n")
    with pytest.raises(Unreadable, match="no session_meta"):
        observe("codex", real, 120)


def test_a_codex_compaction_inside_a_turn_keeps_what_follows_it() -> None:
    data = cx.rollout(
        cx.meta(), *cx.turn("t1", "long ask", "final answer", cx.line("compacted", message="gist"))
    )
    (only,) = project_harness("codex", "rollout.jsonl", data).turns
    assert (only.user, only.summaries, only.assistant) == ([], ["gist"], "final answer")
