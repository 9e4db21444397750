"""Conformance of the Claude Code and Codex readers on real third-party sessions.

The samples sit next to the repository (`<repo>/../shared/samples`, with a SOURCES.md per
harness saying what each file exercises); they are read in place, never copied. Without the
folder these tests skip and say so — except under CI=true, where it must be there.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog, lineage_items
from remem.daemon.sessions.formats.claude_code import Transcript, read_transcript
from remem.daemon.sessions.formats.codex import (
    Rollout,
    cwd_at_start,
    first_line_cwd,
    fork_point,
    read_rollout,
)
from remem.daemon.sessions.formats.jsonl import end_of_line
from remem.daemon.sessions.lineage import build_tree
from tests.sessions.claude_lines import listed_as_read as claude_listed_as_read
from tests.sessions.codex_lines import listed_as_read
from tests.shared_folder import SHARED, require

SAMPLES = SHARED / "samples"
CLAUDE = SAMPLES / "claude-code" / "projects"
CODEX = SAMPLES / "codex" / "sessions"
require(CLAUDE, CODEX, what="the harness samples")

CLAUDE_FILES = sorted(CLAUDE.rglob("*.jsonl"))
CODEX_FILES = sorted(CODEX.rglob("rollout-*.jsonl"))


def claude(relative: str) -> Transcript:
    path = CLAUDE / relative
    return read_transcript(path.read_bytes(), path.name)


def codex(thread: str) -> Rollout:
    (path,) = CODEX.rglob(f"rollout-*-{thread}.jsonl")
    return read_rollout(path.read_bytes())


@pytest.mark.parametrize("path", CLAUDE_FILES, ids=lambda p: str(p.relative_to(CLAUDE)))
def test_every_claude_code_sample_reads_without_error(path: Path) -> None:
    t = claude_listed_as_read(path.read_bytes(), path.name)
    assert t.error is None and t.cwd and t.turns and t.title
    orphan = path.name.startswith("agent-acompact")  # its parent session was not copied (SOURCES.md)
    assert {p.code for p in t.problems} == ({"missing-parent"} if orphan else set())
    assert all(turn.start <= turn.end for turn in t.turns)


@pytest.mark.parametrize("path", CODEX_FILES, ids=lambda p: p.name)
def test_every_codex_sample_reads_without_error(path: Path) -> None:
    r = listed_as_read(path.read_bytes())
    assert r.error is None and r.problems == () and r.turns and r.cwd
    assert path.name.endswith(f"-{r.session_id}.jsonl")
    # A workspace's listing passes another workspace's rollout by on its first line alone, and
    # real first lines (up to 27 KB here) name the cwd at their start, before the instructions.
    line = path.read_bytes().split(b"\n", 1)[0]
    assert first_line_cwd(line) == cwd_at_start(line[:1024]) == r.cwd


def test_the_rewound_session_has_one_branch_sharing_the_hook_summary_parent() -> None:
    t = claude("-experiments-ideas/03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl")
    (branch,) = t.branches  # two prompts share one parent (lines 17 and 37 counted from 0)
    assert branch.after_turn == 1 and branch.turns[0].start == 18
    assert t.turns[1].start == 38 and t.turns[0].status == "completed"


def test_foreign_summaries_are_returned_not_taken_as_the_title() -> None:
    t = claude("-Users-dain-workspace-claude-code-log-sample/fe869ecb-c176-478f-9734-7e4b8ef12cff.jsonl")
    assert len(t.foreign_summaries) == 15 and t.title_source == "prompt"
    assert sum(len(turn.tools) for turn in t.turns) == 32  # its 32 tool_use/tool_result pairs


def test_parallel_agent_calls_are_tools_of_one_turn_not_branches() -> None:
    t = claude("-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl")
    assert t.branches == () and not t.subagent
    assert sum(tool.name == "Agent" for turn in t.turns for tool in turn.tools) >= 6
    assert all(turn.forkable for turn in t.turns)


def test_subagents_in_both_layouts_name_their_parent_session() -> None:
    nested = claude(
        "-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a36efb2a1231c41e2.jsonl"
    )
    loose = claude("-tmp-private/agent-36541525.jsonl")
    assert (nested.subagent, nested.agent_id, nested.parent_session) == (
        True,
        "a36efb2a1231c41e2",
        "ef958aa1-0e93-49f0-bb71-150f63befcd1",
    )
    assert (loose.subagent, loose.parent_session) == (True, "4c2ddfdc-b619-4525-8d03-1950fb1b0257")


def test_a_slash_command_opens_a_turn_and_an_interruption_aborts_one() -> None:
    t = claude("spotter-fixtures/subagent.jsonl")
    assert t.turns[0].prompt.startswith("/handgemacht:create-beads") and t.turns[0].status == "aborted"
    heavy = claude("spotter-fixtures/tool_heavy.jsonl")
    assert [turn.prompt for turn in heavy.turns][1] == "/mcp"


def test_codex_turns_match_the_task_events_and_the_compaction() -> None:
    compacted = codex("019c8a59-e9dd-71f0-9ae3-4079fe9726a9")
    assert len(compacted.turns) == 33 and compacted.compactions == 1
    assert sum(turn.compacted for turn in compacted.turns) == 1
    two = codex("019e1625-789d-76c0-80ab-3724b5ddb799")
    assert [turn.status for turn in two.turns] == ["completed", "completed"] and two.source == "cli"


def test_a_desktop_rollout_without_task_events_is_cut_at_user_messages() -> None:
    r = codex("019e1695-0522-7c83-8b39-0dd379793f80")
    assert len(r.turns) == 3 and all(turn.key.isdigit() for turn in r.turns)  # no turn ids: line numbers


def test_an_unfinished_codex_turn_is_open_and_not_a_fork_point() -> None:
    (turn,) = codex("019c8a70-dda7-7f33-98ea-f30553347322").turns
    assert (turn.status, turn.forkable) == ("open", False)
    assert [tool.ok for tool in turn.tools] == [None]


@pytest.mark.parametrize("path", CODEX_FILES, ids=lambda p: p.name)
def test_a_codex_fork_point_is_the_full_readers_turn(path: Path) -> None:
    data = path.read_bytes()
    full = read_rollout(data)
    for turn in (t for t in full.turns if t.forkable):
        point = fork_point(data, turn.index)
        rollout, found = point.rollout, point.turn
        assert point.cut == end_of_line(data, found.end)
        assert found == msgspec.structs.replace(turn, compacted=found.compacted)
        assert (rollout.session_id, rollout.cwd, rollout.title, rollout.meta_line) == (
            full.session_id, full.cwd, full.title, full.meta_line,
        )  # fmt: skip


def test_every_sample_lists_through_the_catalog_with_its_readers_turns(home: Home) -> None:
    catalog = SessionCatalog(home, [CLAUDE, CODEX], idle_seconds=120)  # formats recognised
    listing = catalog.listing()
    assert listing.errors == []
    assert len(listing.sessions) == len(CLAUDE_FILES) + len(CODEX_FILES)
    turns = {s.id: s.turns for s in listing.sessions}
    for path in CLAUDE_FILES:
        assert turns[path.stem] == len(read_transcript(path.read_bytes(), path.name).turns)
    for path in CODEX_FILES:
        rollout = read_rollout(path.read_bytes())
        assert turns[rollout.session_id or ""] == len(rollout.turns)
    assert {s.format for s in listing.sessions if s.id in {p.stem for p in CLAUDE_FILES}} == {"claude-code"}


def test_the_samples_tree_as_sources_md_describes(home: Home) -> None:
    entries, _ = SessionCatalog(home, [CLAUDE, CODEX], idle_seconds=120).entries()
    nodes = {n.id: n for n in build_tree(lineage_items(entries)).flat()}
    # the rewound session: one abandoned branch after its first turn
    (branch,) = [n for n in nodes.values() if n.kind == "branch"]
    assert (branch.parent, branch.forkTurn) == ("03eb5929-52b3-4b13-ada3-b93ae35806b8", 1)
    # subagents in both layouts under their sessions; the compaction run's session was not copied
    assert nodes["agent-a36efb2a1231c41e2"].parent == "ef958aa1-0e93-49f0-bb71-150f63befcd1"
    assert nodes["agent-36541525"].parent == "4c2ddfdc-b619-4525-8d03-1950fb1b0257"
    assert nodes["agent-acompact-e1f845"].flags == ["orphan"]
    assert {n.kind for n in nodes.values() if n.format == "codex"} == {"root"}
    assert not any("inline" in n.flags for n in nodes.values()), "no sample writes subagents inline"
    problems = {n.id: n.problems for n in nodes.values() if n.problems}
    assert list(problems) == ["agent-acompact-e1f845"]  # its missing parent, as the reader says


def test_a_real_subagent_written_inline_is_a_subagent_node_not_part_of_the_conversation(
    home: Home, tmp_path: Path
) -> None:
    """Claude Code 1.0's layout, from real 2.0 records: the subagent's lines (all sidechain, a
    chain from a null parent) spliced into a copy of its parent's file after its first turn."""
    parent = CLAUDE / "-tmp-private" / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"
    agent = (CLAUDE / "-tmp-private" / "agent-36541525.jsonl").read_bytes()
    original = read_transcript(parent.read_bytes(), parent.name)
    data = parent.read_bytes()
    cut = end_of_line(data, original.turns[0].end)
    project = tmp_path / "projects" / "-tmp-private"
    project.mkdir(parents=True)
    (project / parent.name).write_bytes(data[:cut] + agent + data[cut:])
    spliced = read_transcript((project / parent.name).read_bytes(), parent.name)
    assert [t.prompt for t in spliced.turns] == [t.prompt for t in original.turns]
    assert (spliced.branches, spliced.problems) == (original.branches, ())
    entries, errors = SessionCatalog(home, [tmp_path / "projects"], idle_seconds=120).entries()
    nodes = {n.id: n for n in build_tree(lineage_items(entries)).flat()}
    (inline,) = [n for n in nodes.values() if "inline" in n.flags]
    assert (errors, inline.kind, inline.parent, inline.title) == ([], "subagent", parent.stem, "Warmup")
    assert inline.id == f"{parent.stem}@{spliced.sidechains[0].root}"
