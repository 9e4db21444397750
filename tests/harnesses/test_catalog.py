"""The catalog and `remem sessions` on sessions the real Claude Code and Codex CLIs wrote.

Each scenario's folder is copied first (forks here write into it). What the harness did —
resume, `--fork-session`, `--resume-session-at`, `codex exec fork` — must show in the tree as
the fork, inferred copy, in-file branch or child it is, and a remem fork of a real session
prints the command that resumes it."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from remem.daemon.sessions.harness_transcript import NOT_AT_HAND
from remem.lsp.features.code_lens import _turn_ends

from .conftest import Scenario

pytestmark = pytest.mark.slow


def sessions(home: Home, root: Path, *args: str) -> dict:  # type: ignore[type-arg]
    command = ["--home", str(home.root), "sessions", *args, "--root", str(root), "--json"]
    done = CliRunner().invoke(cli, command)
    return json.loads(done.output)


def copied(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder, tmp_path / folder.name, symlinks=True))


def test_claude_code_resume_fork_and_rewind_in_the_tree(
    home: Home, claude_scenario: Scenario, tmp_path: Path
) -> None:
    root = copied(claude_scenario.runs["first"].transcript.parent.parent, tmp_path)
    parent, fork = claude_scenario.runs["first"].session_id, claude_scenario.runs["fork"].session_id
    listing = sessions(home, root, "list")
    assert listing["errors"] == [] and {s["format"] for s in listing["sessions"]} == {"claude-code"}
    nodes = {n["id"]: n for n in sessions(home, root, "tree", "--cwd", str(claude_scenario.cwd))["nodes"]}
    assert (nodes[fork]["parent"], nodes[fork]["flags"]) == (parent, ["inferred"])
    (branch,) = [n for n in nodes.values() if n["kind"] == "branch"]
    assert (branch["parent"], branch["forkTurn"], branch["title"]) == (parent, 1, "and again")
    turns = sessions(home, root, "turns", parent)["turns"]
    assert [(t["user"], t["forkable"]) for t in turns] == [("read the notes", True), ("instead this", True)]
    before = int(time.time() * 1000)
    made = sessions(home, root, "fork", parent, "--op-id", "real-1", "--at", str(turns[0]["endSeq"]))
    assert made["resume"] == ["claude", "--resume", made["child"]] and made["forkTurn"] == 1
    nodes = {n["id"]: n for n in sessions(home, root, "tree", "--cwd", str(claude_scenario.cwd))["nodes"]}
    assert (nodes[made["child"]]["parent"], nodes[made["child"]]["live"]) == (parent, False)
    # The tree knows where it branched (every copied line says where from), so its row can say
    # "After turn 1"; a --fork-session copy marks nothing, but shares its parent's records: its
    # second turn too, which the parent was rewound past since, so it left after turn 1.
    assert (nodes[made["child"]]["forkTurn"], nodes[fork]["forkTurn"]) == (1, 1)
    # Made just now, not when the conversation it copies began ("just now" in the tree).
    assert nodes[made["child"]]["createdAt"] >= before - 1_000 > nodes[parent]["createdAt"]


def test_the_last_turn_after_a_rewind_is_the_active_conversations(
    home: Home, claude_scenario: Scenario, tmp_path: Path
) -> None:
    root = copied(claude_scenario.runs["first"].transcript.parent.parent, tmp_path)
    parent = claude_scenario.runs["first"].session_id
    command = ["--home", str(home.root), "sessions", "show", parent, "--root", str(root)]
    lines = CliRunner().invoke(cli, command).output.splitlines()
    branch = next(n for n, line in enumerate(lines) if line.startswith("## Abandoned branch"))
    assert [turn for turn, _ in _turn_ends(lines)] == [1, 2]
    assert _turn_ends(lines)[-1][1] == branch, "the last turn's lens sits above the abandoned branch"
    made = sessions(home, root, "fork", parent, "--op-id", "real-last")  # no --at: the last turn
    assert made["forkTurn"] == 2
    turns = sessions(home, root, "turns", made["child"])["turns"]
    assert [t["user"] for t in turns] == ["read the notes", "instead this"]


def test_a_claude_code_subagent_sits_under_its_session(
    home: Home, claude_agent_scenario: Scenario, tmp_path: Path
) -> None:
    root = copied(claude_agent_scenario.runs["first"].transcript.parent.parent, tmp_path)
    nodes = sessions(home, root, "tree", "--cwd", str(claude_agent_scenario.cwd))["nodes"]
    parent = claude_agent_scenario.runs["first"].session_id
    assert [n["kind"] for n in nodes if n["parent"] == parent] == ["subagent"]


def test_codex_resume_and_fork_in_the_tree(home: Home, codex_scenario: Scenario, tmp_path: Path) -> None:
    root = copied(codex_scenario.runs["first"].rollout.parents[3], tmp_path)
    parent, fork = codex_scenario.runs["first"].session_id, codex_scenario.runs["fork"].session_id
    nodes = {n["id"]: n for n in sessions(home, root, "tree", "--cwd", str(codex_scenario.cwd))["nodes"]}
    assert (nodes[parent]["format"], nodes[fork]["parent"], nodes[fork]["kind"]) == ("codex", parent, "fork")
    assert len(sessions(home, root, "turns", parent)["turns"]) == 2  # the first turn and the resumed one
    made = sessions(home, root, "fork", parent, "--op-id", "real-2")
    resume = ["codex", "resume", made["child"]]  # interactive: it waits for the next prompt
    assert made["resume"] == resume and made["forkTurn"] == 2
    listed = {s["id"]: s for s in sessions(home, root, "list", "--cwd", str(codex_scenario.cwd))["sessions"]}
    assert (listed[made["child"]]["parent"], listed[made["child"]]["turns"]) == (parent, 2)
    # Where remem's fork branched: the turns begun before its own session_meta was written. Codex's
    # own fork copies no turn of its parent: its `history_base` names the parent's lines it
    # inherits, and the parent's file says how many turns began in them.
    nodes = {n["id"]: n for n in sessions(home, root, "tree", "--cwd", str(codex_scenario.cwd))["nodes"]}
    assert (nodes[made["child"]]["forkTurn"], nodes[fork]["forkTurn"]) == (2, 2)


def test_a_codex_forks_transcript_opens_with_what_it_inherits(
    home: Home, codex_scenario: Scenario, tmp_path: Path
) -> None:
    # Codex's own fork copies none of its parent's lines, so its file alone reads as one turn.
    root = copied(codex_scenario.runs["first"].rollout.parents[3], tmp_path)
    parent, fork = codex_scenario.runs["first"].session_id, codex_scenario.runs["fork"].session_id

    def shown() -> list[str]:
        command = ["--home", str(home.root), "sessions", "show", fork, "--root", str(root)]
        return CliRunner().invoke(cli, command).output.splitlines()

    lines = shown()
    headings = [line.split(" — ")[0] for line in lines if line.startswith("#")][1:]
    assert headings == [
        f"## Inherited from `{parent}`",
        "### Inherited turn 1",
        "### Inherited turn 2",
        "## Turn 1",
    ]
    said = "\n".join(lines)
    assert said.index("> notes say alpha") < said.index("> second answer") < said.index("> forked prompt")
    assert [turn for turn, _ in _turn_ends(lines)] == [1], "only the fork's own turn gets a lens"
    rollout = codex_scenario.runs["first"].rollout  # the resumed turn went into the same file
    (root / rollout.relative_to(rollout.parents[3])).unlink()
    lines = shown()
    assert f"## Inherited from `{parent}`" in lines
    assert NOT_AT_HAND in lines
    assert not any(line.startswith("### Inherited turn") for line in lines)


def test_a_claude_code_forks_transcript_says_where_it_was_forked_and_what_it_copied(
    home: Home, claude_scenario: Scenario, tmp_path: Path
) -> None:
    root = copied(claude_scenario.runs["first"].transcript.parent.parent, tmp_path)
    made = sessions(
        home, root, "fork", claude_scenario.runs["first"].session_id, "--op-id", "o", "--turn", "1"
    )
    command = ["--home", str(home.root), "sessions", "show", made["child"], "--root", str(root)]
    lines = CliRunner().invoke(cli, command).output.splitlines()
    assert "- Fork point: after turn 1 (turn 1 copied from the parent)" in lines
    [heading] = [line for line in lines if line.startswith("## Turn")]
    assert heading.startswith("## Turn 1 — completed — ") and heading.endswith(" — inherited")
    assert [turn for turn, _ in _turn_ends(lines)] == [1]  # the lens still finds the turn
