"""What the daemon offers to branch agrees with what its fork service makes: a Claude Code
subagent's own file is refused (`claude --resume` finds no conversation in a child of its
sidechain records), so none of its turns reads forkable (each keeps the status it ended with,
and `sessions turns` says to branch its parent) and its transcript gets no "Branch after turn"
lens; a Codex subagent forks like any rollout, so its turns stay forkable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from remem.lsp.features.code_lens import _turn_ends

from .claude_lines import CWD, SID
from .codex_lines import meta, rollout, turn
from .harness_roots import build_roots, claude_project, write

AGENT = "agent-a1b2"  # the Claude Code 2.1 subagent `build_roots` writes under SID
SPAWNED = "019c0000-0000-7000-8000-0000000000e2"


@pytest.fixture
def roots(tmp_path: Path) -> dict[str, Path]:
    roots = build_roots(tmp_path)
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": "019c0000-0000-7000-8000-000000000001"}}}
    spawned = rollout(meta(SPAWNED, cwd=CWD, source=spawn), *turn("t1", "sub task", "done"))
    write(roots["codex"] / "2026" / "05" / "02" / f"rollout-2026-05-02T00-00-00-{SPAWNED}.jsonl", spawned)
    return roots


def sessions(home: Home, roots: dict[str, Path], *args: str) -> str:
    extra = [f"--root={p}" for p in roots.values()]
    return CliRunner().invoke(cli, [f"--home={home.root}", "sessions", *args, *extra]).output


def turn_rows(home: Home, roots: dict[str, Path], session: str) -> list[tuple[int, str, bool]]:
    rows = json.loads(sessions(home, roots, "turns", session, "--json"))["turns"]
    return [(row["turn"], row["status"], row["forkable"]) for row in rows]


def test_no_turn_of_a_claude_code_subagents_file_is_offered_for_branching(
    home: Home, roots: dict[str, Path]
) -> None:
    assert (claude_project(roots["claude-code"]) / SID / "subagents" / f"{AGENT}.jsonl").is_file()
    # Its turn ended as its session's did, and says so, but no fork can be made after it.
    assert turn_rows(home, roots, AGENT) == [(1, "completed", False)]
    [row] = json.loads(sessions(home, roots, "turns", AGENT, "--json"))["turns"]
    assert row["endSeq"] == 4
    [line] = sessions(home, roots, "turns", AGENT).splitlines()
    assert "completed" in line and line.endswith(f"(subagent: branch its parent {SID})"), line
    refused = json.loads(sessions(home, roots, "fork", AGENT, "--op-id", "x", "--json"))
    assert refused["error"]["code"] == "INVALID" and "not subagents" in refused["error"]["message"]
    # The session that ran it is the one to branch, and it is offered.
    assert turn_rows(home, roots, SID) == [(1, "completed", True), (2, "completed", True)]


def test_a_claude_code_subagents_transcript_says_why_it_has_no_branch_lens(
    home: Home, roots: dict[str, Path]
) -> None:
    shown = sessions(home, roots, "show", AGENT).splitlines()
    assert "## Turn 1 — completed — 2026-01-01T00:00:02Z" in shown  # the turn as it ended
    assert "- Branching: none (Claude Code resumes sessions, not subagents: branch its parent)" in shown
    forkable = {turn for turn, _, forkable in turn_rows(home, roots, AGENT) if forkable}
    assert [turn for turn, _ in _turn_ends(shown) if turn in forkable] == []


def test_a_codex_subagent_stays_forkable_and_its_fork_is_its_branch(
    home: Home, roots: dict[str, Path]
) -> None:
    assert turn_rows(home, roots, SPAWNED) == [(1, "completed", True)]
    assert "Branching" not in sessions(home, roots, "show", SPAWNED)
    made = json.loads(sessions(home, roots, "fork", SPAWNED, "--op-id", "y", "--json"))
    resume = ["codex", "resume", made["child"]]
    assert made["created"] and made["resume"] == resume
    nodes = {n["id"]: n for n in json.loads(sessions(home, roots, "tree", "--cwd", CWD, "--json"))["nodes"]}
    assert (nodes[SPAWNED]["kind"], nodes[SPAWNED]["forkTurn"]) == ("subagent", None)
    child = nodes[made["child"]]
    assert (child["kind"], child["parent"], child["forkTurn"]) == ("fork", SPAWNED, 1)
    assert turn_rows(home, roots, made["child"]) == [(1, "completed", True)]
