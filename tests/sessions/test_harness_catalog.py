"""Claude Code transcripts and Codex rollouts in the catalog: listing beside DSH logs, the
workspace's folders, the tree (forks, subagents, in-file branches, inferred copies), liveness,
bad input per file, settings and default roots. Shapes the real CLIs cannot be made to write
(a torn line, a sidecar alone, a link) are hand-built here; tests/harnesses lists real ones."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from remem.daemon.sessions import harness_sources
from remem.daemon.sessions.catalog import SessionCatalog, lineage_items
from remem.daemon.sessions.errors import OperationError
from remem.daemon.sessions.formats import jsonl as jsonl_format
from remem.daemon.sessions.harness_transcript import PROBLEMS_SHOWN, render_harness_transcript
from remem.daemon.sessions.lineage import build_tree
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.sources import Root, all_roots, detect_format
from remem.daemon.settings import SessionRootSetting
from remem.lsp.features.code_lens import _turn_ends

from .claude_lines import CWD, inline_subagents, jsonl, prompt, say
from .codex_lines import call, event, first_rollouts, line, message, meta, rollout, turn
from .harness_roots import CHILD, COPY, FORK, SID, TID, build_roots, claude_project, conversation, write

CHILD2 = "019c0000-0000-7000-8000-0000000000c2"


@pytest.fixture
def roots(tmp_path: Path) -> dict[str, Path]:
    return build_roots(tmp_path)


def invoke(home: Home, roots: dict[str, Path], *args: str) -> str:
    """`remem sessions ARGS` over `roots`, its output."""
    extra = [f"--root={p}" for p in roots.values()]
    return CliRunner().invoke(cli, [f"--home={home.root}", "sessions", *args, *extra]).output


def watch_reads(monkeypatch: pytest.MonkeyPatch, read: list[str]) -> None:
    """Have the name of every harness file the adapters read for the index go to `read`."""
    for source in harness_sources.HARNESS_SOURCES.values():
        original = source.follow
        monkeypatch.setattr(
            source, "follow", lambda p, r, k, root=None, o=original: read.append(p.name) or o(p, r, k, root)
        )


def catalog(home: Home, roots: dict[str, Path], idle: int = 120) -> SessionCatalog:
    return SessionCatalog(home, [Root(path, fmt) for fmt, path in roots.items()], idle)  # type: ignore[arg-type]


def test_every_format_lists_side_by_side_each_row_naming_its_harness(
    home: Home, roots: dict[str, Path]
) -> None:
    listing = catalog(home, roots).listing()
    assert listing.errors == []
    formats = {s.id: s.format for s in listing.sessions}
    assert formats == {
        SID: "claude-code", FORK: "claude-code", COPY: "claude-code", "agent-a1b2": "claude-code",
        TID: "codex", CHILD: "codex", "019c-else": "codex", "dsh-1": "dsh",
    }  # fmt: skip
    by_id = {s.id: s for s in listing.sessions}
    assert (by_id[SID].cwd, by_id[SID].turns, by_id[SID].title) == (CWD, 2, "read the notes")
    assert (by_id[FORK].kind, by_id[FORK].parent) == ("fork", SID)
    assert (by_id["agent-a1b2"].kind, by_id["agent-a1b2"].parent) == ("subagent", SID)
    assert (by_id[CHILD].kind, by_id[CHILD].parent, by_id["019c-else"].cwd) == ("fork", TID, "/else")


def test_a_workspace_reads_only_its_claude_folder_and_filters_codex_by_cwd(
    home: Home, roots: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    other = claude_project(roots["claude-code"], "/home/u/other")
    write(other / "11111111-0000-4000-8000-000000000000.jsonl", jsonl(prompt("x1", None, "elsewhere")))
    read: list[str] = []
    watch_reads(monkeypatch, read)
    ids = {s.id for s in catalog(home, roots).listing(CWD).sessions}
    assert ids == {SID, FORK, COPY, "agent-a1b2", TID, CHILD, "dsh-1"}
    assert not any(name.startswith("1111") for name in read)  # the other folder was never opened
    read.clear()
    assert {s.id for s in catalog(home, roots).listing(CWD).sessions} == ids
    assert read == []  # warm: every file was a stat and an index hit


def test_a_workspace_glances_at_another_workspaces_rollout_and_never_reads_it_whole(
    home: Home, roots: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    day = roots["codex"] / "2026" / "05" / "01"
    elsewhere = day / "rollout-2026-05-01T00-20-00-elsewhere.jsonl"
    # A first line that is not the session_meta cannot tell: that rollout is read whole, and
    # refused, since a later session_meta is never the rollout's own.
    late_meta = rollout(line("turn_context", cwd="/else"), meta("019c-late", cwd="/else"))
    late = write(day / "rollout-2026-05-01T00-30-00-late.jsonl", late_meta)
    read: list[str] = []
    watch_reads(monkeypatch, read)
    mine = {s.id for s in catalog(home, roots).listing(CWD).sessions}
    assert mine == {SID, FORK, COPY, "agent-a1b2", TID, CHILD, "dsh-1"}
    assert elsewhere.name not in read and late.name in read

    read.clear()
    listing = catalog(home, roots).listing()
    every = {s.id for s in listing.sessions}
    assert every == mine | {"019c-else"} and elsewhere.name in read  # indexed when listed
    assert [Path(e.path).name for e in listing.errors] == [late.name]  # line 1 is no session_meta

    # Rewritten for this workspace: the stale row is looked at again and the rollout now lists here.
    write(elsewhere, rollout(meta("019c-else", cwd=CWD), *turn("t1", "moved", "here")), old=False)
    assert "019c-else" in {s.id for s in catalog(home, roots).listing(CWD).sessions}


@pytest.mark.parametrize("instructions", [3_000, 30_000, 100_000])
def test_a_glance_reads_a_long_session_meta_to_its_end_when_its_start_does_not_name_the_cwd(
    home: Home, roots: dict[str, Path], monkeypatch: pytest.MonkeyPatch, instructions: int
) -> None:
    """Real rollouts' first lines run from a few hundred bytes to tens of KB (the base
    instructions): one whose cwd comes after them is read on until the line ends, however
    many reads that takes."""
    first = line("session_meta", id="019c-far", base_instructions={"text": "x" * instructions}, cwd="/far")
    far = write(roots["codex"] / "2026" / "05" / "02" / "rollout-2026-05-02T00-00-00-far.jsonl",
                rollout(first, *turn("t1", "far away", "yes")))  # fmt: skip
    read: list[str] = []
    watch_reads(monkeypatch, read)
    assert "019c-far" not in {s.id for s in catalog(home, roots).listing(CWD).sessions}
    assert far.name not in read
    assert "019c-far" in {s.id for s in catalog(home, roots).listing("/far").sessions}


def test_a_glance_stops_at_the_cwd_when_the_first_line_names_it_first(
    home: Home, roots: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex writes the cwd before the base instructions: a glance reads no further, so even a
    first line past what a glance reads (and past the cap on a line) is passed by as the other
    workspace's; it was read whole and reported in every workspace's tree. Listed, it is refused."""
    monkeypatch.setattr(jsonl_format, "MAX_LINE", 4096)
    huge = meta(
        "019c-huge", cwd="/far", base_instructions={"text": "x" * 2 * harness_sources.FIRST_LINE_BYTES}
    )
    path = write(roots["codex"] / "2026" / "05" / "02" / "rollout-2026-05-02T00-00-00-huge.jsonl",
                 rollout(huge, *turn("t1", "far away", "yes")))  # fmt: skip
    read: list[str] = []
    watch_reads(monkeypatch, read)
    mine = catalog(home, roots).listing(CWD)
    assert path.name not in read and path.name not in {Path(e.path).name for e in mine.errors}
    far = catalog(home, roots).listing("/far")
    assert [Path(e.path).name for e in far.errors] == [path.name] and path.name in read


def test_a_changed_file_is_read_again(home: Home, roots: dict[str, Path]) -> None:
    path = claude_project(roots["claude-code"]) / f"{SID}.jsonl"
    assert {s.id: s.turns for s in catalog(home, roots).listing().sessions}[SID] == 2
    write(path, path.read_bytes() + jsonl(prompt("u4", "a4", "third"), say("a5", "u4", "done")))
    assert {s.id: s.turns for s in catalog(home, roots).listing().sessions}[SID] == 3


def test_turns_are_read_when_first_asked_for_and_kept_until_the_file_changes(
    home: Home, roots: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = catalog(home, roots)
    listed.listing()
    path = str(claude_project(roots["claude-code"]) / f"{SID}.jsonl")
    assert listed.index.turns(path) == []  # a listing counts the turns; it does not store them
    read: list[int] = []  # how many turns each read of a file's turns found
    original = harness_sources.turn_summaries
    monkeypatch.setattr(harness_sources, "turn_summaries", lambda t: read.append(len(t)) or original(t))
    first = [(t.turn, t.startSeq, t.endSeq, t.status) for t in listed.projection(SID).turns]
    assert first == [(1, 1, 4, "completed"), (2, 7, 8, "completed")]
    assert [(t.turn, t.startSeq, t.endSeq, t.status) for t in listed.index.turns(path)] == first
    again = catalog(home, roots)
    assert [(t.turn, t.startSeq) for t in again.projection(SID).turns] == [(1, 1), (2, 7)]
    assert read == [2]  # the second time, from the index
    write(Path(path), Path(path).read_bytes() + jsonl(prompt("u4", "a4", "third"), say("a5", "u4", "done")))
    assert [t.turn for t in catalog(home, roots).projection(SID).turns] == [1, 2, 3]
    assert read == [2, 3]  # listed again with the change, so its turns were read again


def test_turns_read_from_a_file_changed_since_its_row_are_not_stored(
    home: Home, roots: dict[str, Path]
) -> None:
    listed = catalog(home, roots)
    listed.listing()
    path = str(claude_project(roots["claude-code"]) / f"{SID}.jsonl")
    row = listed.index.row(path)
    assert row is not None
    turns = listed.projection(SID).turns
    assert not listed.index.put_turns(path, "another revision", turns[:1])
    assert len(listed.index.turns(path)) == 2
    assert listed.index.put_turns(path, row.revision, turns[:1])  # the index's own revision: replaced
    assert [t.turn for t in listed.index.turns(path)] == [1]


def test_the_tree_nests_forks_subagents_branches_and_inferred_copies(
    home: Home, roots: dict[str, Path]
) -> None:
    entries, errors = catalog(home, roots).entries(CWD)
    nodes = {n.id: n for n in build_tree(lineage_items(entries)).flat()}
    assert errors == []
    assert (nodes[FORK].parent, nodes[FORK].kind, nodes[FORK].flags) == (SID, "fork", [])
    assert (nodes[COPY].parent, nodes[COPY].kind, nodes[COPY].flags) == (SID, "fork", ["inferred"])
    assert (nodes["agent-a1b2"].parent, nodes["agent-a1b2"].kind) == (SID, "subagent")
    (branch,) = [n for n in nodes.values() if n.kind == "branch"]
    assert (branch.id, branch.parent, branch.forkTurn, branch.title) == (f"{SID}@a3", SID, 1, "and again")
    assert (nodes[CHILD].parent, nodes[CHILD].format, nodes[SID].format) == (TID, "codex", "claude-code")


def test_a_codex_fork_that_copies_no_line_reads_its_fork_turn_from_its_parent(
    home: Home, roots: dict[str, Path]
) -> None:
    """Codex 0.16x forks by reference: the child's `history_base` names the parent's lines it
    inherits, and the parent may have gone on since."""
    day = roots["codex"] / "2026" / "05" / "03"
    parent_id, child_id = "019c0000-0000-7000-8000-0000000000d1", "019c0000-0000-7000-8000-0000000000d2"
    two_turns = [meta(parent_id, cwd=CWD), *turn("t1", "one", "1"), *turn("t2", "two", "2")]
    write(day / f"rollout-2026-05-03T00-00-00-{parent_id}.jsonl", rollout(*two_turns, *turn("t3", "on", "3")))
    base = {"thread_id": parent_id, "end_ordinal_exclusive": len(two_turns)}
    child = rollout(
        meta(child_id, cwd=CWD, forked_from_id=parent_id, history_base=base), *turn("t9", "mine", "9")
    )
    write(day / f"rollout-2026-05-03T00-10-00-{child_id}.jsonl", child)
    entries, _ = catalog(home, roots).entries(CWD)
    nodes = {n.id: n for n in build_tree(lineage_items(entries)).flat()}
    assert (nodes[child_id].parent, nodes[child_id].kind, nodes[child_id].forkTurn) == (parent_id, "fork", 2)
    assert nodes[CHILD].forkTurn is None  # a fork naming no lines it inherits has no fork turn to read


def test_a_codex_fork_inherits_the_turns_of_its_ancestors_in_the_lines_it_names() -> None:
    """A fork of a fork, each by reference: the grandparent's turns before the parent's
    `history_base`, then the parent's before the child's; what either did after is not inherited."""
    ids = [f"019c0000-0000-7000-8000-00000000000{n}" for n in range(3)]
    two_turns = [meta(ids[0], cwd=CWD), *turn("t1", "one", "1"), *turn("t2", "two", "2")]
    first = [
        meta(ids[1], cwd=CWD, history_base={"thread_id": ids[0], "end_ordinal_exclusive": len(two_turns)})
    ]
    first += turn("t3", "three", "3")
    files = {
        ids[0]: rollout(*two_turns, *turn("t9", "later", "9")),
        ids[1]: rollout(*first, *turn("t8", "after the fork", "8")),
    }
    base = {"thread_id": ids[1], "end_ordinal_exclusive": len(first)}
    child = harness_sources.codex_view(rollout(meta("019c-child", cwd=CWD, history_base=base)))
    parts = harness_sources.inherited_history(child, first_rollouts(files))
    assert [(p.session, [t.prompt for t in p.turns]) for p in parts] == [
        (ids[0], ["one", "two"]),
        (ids[1], ["three"]),
    ]
    files[ids[1]] = rollout(
        meta(ids[1], cwd=CWD, history_base={"thread_id": "019c-child", "end_ordinal_exclusive": 1})
    )
    looped = harness_sources.inherited_history(child, first_rollouts(files))
    assert [p.session for p in looped] == [ids[1]], "a cycle back to the child ends the walk"
    missing = harness_sources.inherited_history(child, first_rollouts({}))
    assert [(p.session, p.turns, p.lines) for p in missing] == [(ids[1], (), None)]


def test_a_subagent_whose_session_is_gone_is_an_orphan_and_a_lone_sidecar_an_error(
    home: Home, roots: dict[str, Path]
) -> None:
    project = claude_project(roots["claude-code"])
    (project / f"{SID}.jsonl").unlink()
    write(project / SID / "subagents" / "agent-gone.meta.json", b'{"agentType":"x"}')
    entries, errors = catalog(home, roots).entries(CWD)
    assert [(Path(e.path).name, e.message.split(";")[0]) for e in errors] == [
        ("agent-gone.meta.json", "a subagent's .meta.json without its transcript agent-gone.jsonl")
    ]
    nodes = {n.id: n for n in build_tree(lineage_items(entries)).flat()}
    assert nodes["agent-a1b2"].flags == ["orphan"] and nodes[FORK].flags == ["orphan"]


def test_bad_files_are_per_file_errors_and_the_others_still_list(home: Home, roots: dict[str, Path]) -> None:
    project = claude_project(roots["claude-code"])
    write(project / "22222222-0000-4000-8000-000000000000.jsonl", b"not json\n\xff\xfe\n")
    torn = jsonl(*conversation()) + b'{"type": "user", "uuid": "half'
    write(project / f"{SID}.jsonl", torn)
    day = roots["codex"] / "2026" / "05" / "02"
    write(day / "rollout-2026-05-02T00-00-00-nometa.jsonl", rollout(*turn("t1", "hi", "hello")))
    (day / "rollout-2026-05-02T00-00-01-link.jsonl").symlink_to(project / f"{SID}.jsonl")
    listing = catalog(home, roots).listing()
    reasons = {Path(e.path).name: e.message for e in listing.errors}
    assert reasons["22222222-0000-4000-8000-000000000000.jsonl"].startswith("no conversation records")
    assert reasons["rollout-2026-05-02T00-00-00-nometa.jsonl"].startswith("no session_meta line")
    assert "symbolic link" in reasons["rollout-2026-05-02T00-00-01-link.jsonl"]
    assert len(reasons) == 3
    assert {s.id: s.turns for s in listing.sessions}[SID] == 2  # a torn tail is the harness appending


def test_a_linked_subagents_folder_is_refused_not_followed(
    home: Home, roots: dict[str, Path], tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    write(outside / "agent-secret.jsonl", jsonl(prompt("x1", None, "private words"), say("x2", "x1", "data")))
    session = "33333333-0000-4000-8000-000000000000"
    write(claude_project(roots["claude-code"]) / f"{session}.jsonl", jsonl(*conversation()))
    session_folder = claude_project(roots["claude-code"]) / session
    session_folder.mkdir()
    (session_folder / "subagents").symlink_to(outside)
    listing = catalog(home, roots).listing()
    assert "agent-secret" not in {s.id for s in listing.sessions}
    assert "symbolic link" in {e.path: e.message for e in listing.errors}[str(session_folder / "subagents")]


@pytest.mark.parametrize("memo", [False, True])
def test_a_file_name_that_is_not_utf8_is_one_error_in_every_format(
    home: Home, roots: dict[str, Path], memo: bool
) -> None:
    """SQLite and the listing hold paths as UTF-8: one such name failed every listing."""
    bad = os.fsdecode(b"\xff")
    project = claude_project(roots["claude-code"])
    write(project / f"{bad}.jsonl", (project / f"{SID}.jsonl").read_bytes())
    day = roots["codex"] / "2026" / "05" / "01"
    write(day / f"rollout-{bad}-x.jsonl", next(day.glob(f"*{TID}.jsonl")).read_bytes())
    (dsh_log,) = roots["dsh"].glob("*/*/session.jsonl")
    write(dsh_log.parent.parent / bad / "session.jsonl", dsh_log.read_bytes())
    kept = ListingMemo(lambda: False) if memo else None
    cat = SessionCatalog(home, [Root(path, fmt) for fmt, path in roots.items()], 120, kept)  # type: ignore[arg-type]
    listing = cat.listing()
    reasons = {e.path: e.message for e in listing.errors}
    assert reasons == {
        str(project / "\\xff.jsonl"): harness_sources.NAME_REASON,
        str(day / "rollout-\\xff-x.jsonl"): harness_sources.NAME_REASON,
        str(dsh_log.parent.parent / "\\xff" / "session.jsonl"): harness_sources.NAME_REASON,
    }
    assert {SID, TID, "dsh-1"} <= {s.id for s in listing.sessions}


def test_a_file_with_a_line_past_the_cap_is_one_error_never_held_whole(
    home: Home, roots: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl_format, "MAX_LINE", 4096)
    project = claude_project(roots["claude-code"])
    huge = json.dumps({"type": "user", "uuid": "h1", "cwd": CWD, "message": {"content": "x" * 10_000}})
    name = "33333333-0000-4000-8000-000000000000.jsonl"
    head = jsonl(*conversation())
    write(project / name, head + huge.encode() + b"\n")
    listing = catalog(home, roots).listing()
    reasons = {Path(e.path).name: e.message for e in listing.errors}
    assert list(reasons) == [name]
    huge_line = len(head.splitlines()) + 1
    assert f"line {huge_line} is longer than 4096 bytes" in reasons[name]
    assert SID in {s.id for s in listing.sessions}  # the other sessions still list


def test_liveness_is_a_recent_change(home: Home, roots: dict[str, Path]) -> None:
    path = claude_project(roots["claude-code"]) / f"{SID}.jsonl"
    os.utime(path, None)
    live = {s.id: s.live for s in catalog(home, roots).listing().sessions}
    assert live[SID] and not live[FORK] and not live[TID]


@pytest.mark.parametrize(
    ("session", "fmt", "first"),
    [(SID, "claude-code", "lines 1-4"), (TID, "codex", "lines 2-6"), ("dsh-1", "dsh", "events 0-")],
)
def test_turns_name_a_harness_files_lines_as_lines_and_a_dsh_logs_events_as_events(
    home: Home, roots: dict[str, Path], session: str, fmt: str, first: str
) -> None:
    assert json.loads(invoke(home, roots, "turns", session, "--json"))["format"] == fmt
    assert f"completed   {first}" in invoke(home, roots, "turns", session).splitlines()[0]


def test_turns_and_transcript_headings_fit_the_editors_lenses(home: Home, roots: dict[str, Path]) -> None:
    rows = json.loads(invoke(home, roots, "turns", SID, "--json"))["turns"]
    assert [(r["turn"], r["startSeq"], r["endSeq"], r["status"], r["forkable"]) for r in rows] == [
        (1, 1, 4, "completed", True),
        (2, 7, 8, "completed", True),
    ]
    shown = invoke(home, roots, "show", SID)
    headings = [line for line in shown.splitlines() if line.startswith("#")]
    assert headings == [
        "# read the notes",
        "## Turn 1 — completed — 2026-01-01T00:00:02Z",
        "## Turn 2 — completed — 2026-01-01T00:01:00Z",
        "## Abandoned branch after turn 1 (leaf `a3`)",
        "### Abandoned turn 2 — completed",
    ]
    assert "- Harness: Claude Code" in shown and "> rewound answer" in shown
    # The transcript lenses' own parser: one "Branch after turn N" per turn of the conversation,
    # right after it; the last turn's above the abandoned branch, none inside the branch.
    lines = shown.splitlines()
    assert _turn_ends(lines) == [(1, lines.index(headings[2])), (2, lines.index(headings[3]))]
    header = json.loads(invoke(home, roots, "show", SID, "--json"))
    assert (header["header"]["format"], header["header"]["cwd"], header["events"]) == ("claude-code", CWD, [])
    assert [t["turn"] for t in header["turns"]] == [1, 2]


@pytest.mark.parametrize(
    ("session", "harness", "variable", "resume"),
    [
        (SID, "claude-code", "CLAUDE_CONFIG_DIR", "claude --resume"),
        # Codex's interactive resume, as Claude Code's: it waits for the next prompt (decision 0438).
        (TID, "codex", "CODEX_HOME", "codex resume"),
    ],
)
def test_a_harness_fork_prints_the_command_that_resumes_it_and_is_not_live(
    home: Home, roots: dict[str, Path], session: str, harness: str, variable: str, resume: str
) -> None:
    made = invoke(home, roots, "fork", session, "--op-id", f"op-{session}")
    child = made.split()[1]
    # From the session's folder, with the harness's home: these roots are not its default one.
    harness_home = shlex.quote(str(roots[harness].parent))
    command = f"cd {CWD} && {variable}={harness_home} {resume} {child}"
    assert made.splitlines()[1] == f"resume it with: {command}", made
    listed = {s.id: s for s in catalog(home, roots).listing().sessions}
    assert (listed[child].parent, listed[child].live) == (session, False)
    assert listed[child].format == listed[session].format
    again = json.loads(invoke(home, roots, "fork", session, "--op-id", f"op-{session}", "--json"))
    assert again["child"] == child and not again["created"] and resume.split() == again["resume"][:-1]
    assert (again["cwd"], again["env"], again["command"]) == (
        CWD,
        {variable: str(roots[harness].parent)},
        command,
    )
    assert again["note"].startswith(
        f"the session's folder {CWD} is not there any more"
    )  # nor on this machine


def _codex_root(folder: Path) -> dict[str, Path]:
    """A Codex root at `folder` holding TID's two-turn rollout directly (no date folders)."""
    two = rollout(meta(cwd=CWD), *turn("t1", "one", "1"), *turn("t2", "two", "2"))
    write(folder / f"rollout-2026-05-01T00-00-00-{TID}.jsonl", two)
    return {"codex": folder}


@pytest.mark.parametrize("name", ["sessions", "flat"])
def test_a_codex_fork_lands_inside_the_root_its_parent_was_listed_from(
    home: Home, tmp_path: Path, name: str
) -> None:
    """A `sessions` folder gets today's date folders, as Codex writes; any other root the child
    beside its parent (decision 0290). Either way it lists, and the command exits."""
    roots = _codex_root(tmp_path / "r1" / "r2" / "r3" / name)
    # Codex files by local time; the day read on both sides of the fork, as a fork running over
    # midnight lands in either.
    days = {time.strftime("%Y/%m/%d", time.localtime())}
    made = json.loads(invoke(home, roots, "fork", TID, "--op-id", "flat", "--json"))
    days.add(time.strftime("%Y/%m/%d", time.localtime()))
    (child,) = [p for p in tmp_path.rglob("rollout-*.jsonl") if made["child"] in p.name]
    folders = {roots["codex"] / day for day in days} if name == "sessions" else {roots["codex"]}
    assert child.parent in folders
    listed = {s.id: s for s in catalog(home, roots).listing().sessions}
    assert listed[made["child"]].parent == TID


def test_an_archived_codex_rollout_forks_into_its_sibling_sessions_root_only_when_listed(
    home: Home, tmp_path: Path
) -> None:
    archived = _codex_root(tmp_path / "codex" / "archived_sessions")
    refused = json.loads(invoke(home, archived, "fork", TID, "--op-id", "a", "--json"))
    assert refused["error"]["code"] == "INVALID" and "not a session root" in refused["error"]["message"]
    assert list(tmp_path.rglob("rollout-*.jsonl")) == [next(archived["codex"].iterdir())]
    sessions = tmp_path / "codex" / "sessions"
    (sessions / "2026").mkdir(parents=True)  # a year folder: recognised as Codex's
    both = [f"--root={archived['codex']}", f"--root={sessions}"]
    done = CliRunner().invoke(
        cli, [f"--home={home.root}", "sessions", "fork", TID, "--op-id", "a", "--json", *both]
    )
    made = json.loads(done.output)
    (child,) = sessions.glob(f"*/*/*/rollout-*-{made['child']}.jsonl")
    listed = {s.id: s for s in SessionCatalog(home, [archived["codex"], sessions], 120).listing().sessions}
    assert listed[made["child"]].parent == TID


def test_a_codex_fork_never_lands_through_a_link_in_its_root(home: Home, tmp_path: Path) -> None:
    sessions = _codex_root(tmp_path / "codex" / "sessions")
    outside = tmp_path / "outside"
    outside.mkdir()
    # The year the fork reads, locally: this one, or the next when the run crosses the new year.
    for year in {time.localtime(when).tm_year for when in (time.time(), time.time() + 24 * 3600)}:
        (sessions["codex"] / str(year)).symlink_to(outside)
    refused = json.loads(invoke(home, sessions, "fork", TID, "--op-id", "a", "--json"))
    assert refused["error"]["code"] == "INVALID" and "symbolic link" in refused["error"]["message"]
    assert list(outside.rglob("*")) == []


def test_a_codex_fork_retried_after_codex_archived_its_parent_is_the_same_child(
    home: Home, tmp_path: Path
) -> None:
    codex = tmp_path / "codex"
    both = {"codex": _codex_root(codex / "sessions")["codex"], "archived": codex / "archived_sessions"}
    both["archived"].mkdir()
    made = json.loads(invoke(home, both, "fork", TID, "--op-id", "a", "--at", "2", "--json"))
    (parent,) = both["codex"].glob(f"rollout-*-{TID}.jsonl")
    parent.rename(both["archived"] / parent.name)  # what `codex archive` does
    again = json.loads(invoke(home, both, "fork", TID, "--op-id", "a", "--at", "2", "--json"))
    assert "error" not in again, again
    assert (again["child"], again["created"], made["created"]) == (made["child"], False, True)


def test_a_codex_fork_is_made_and_said_so_when_remem_cannot_title_it(
    home: Home, roots: dict[str, Path]
) -> None:
    # Its title is remem's metadata, which is unreadable here: the listing says so; the fork,
    # already published and committed, is no failure.
    meta_file = home.ensure_layout().state / "session-meta.json"
    meta_file.write_text("{garbage")
    made = json.loads(invoke(home, roots, "fork", TID, "--op-id", "t", "--json"))
    assert made["created"] is True
    assert made["child"] in {s.id for s in catalog(home, roots).listing().sessions}
    assert meta_file.read_text() == "{garbage"


def test_a_log_outside_every_root_has_no_root(home: Home, roots: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(OperationError, match="lies in none of the session roots"):
        catalog(home, roots).root_of(tmp_path / "elsewhere" / "x.jsonl")


def test_a_codex_fork_is_titled_as_asked_and_keeps_a_later_rename(home: Home, roots: dict[str, Path]) -> None:
    """A rollout has no title record: the child's title is remem's own (decision 0291)."""
    made = json.loads(invoke(home, roots, "fork", TID, "--op-id", "t", "--title", "my branch", "--json"))
    default = json.loads(invoke(home, roots, "fork", TID, "--op-id", "d", "--json"))
    titles = {s.id: s.title for s in catalog(home, roots).listing().sessions}
    assert (titles[made["child"]], titles[default["child"]]) == ("my branch", "hi (1)")
    tree = {n["id"]: n for n in json.loads(invoke(home, roots, "tree", "--cwd", CWD, "--json"))["nodes"]}
    assert tree[made["child"]]["title"] == "my branch"
    invoke(home, roots, "rename", made["child"], "renamed")
    invoke(home, roots, "fork", TID, "--op-id", "t", "--title", "my branch", "--json")  # a retry
    assert {s.id: s.title for s in catalog(home, roots).listing().sessions}[made["child"]] == "renamed"


def test_a_renamed_claude_code_parent_titles_its_fork(home: Home, roots: dict[str, Path]) -> None:
    """As for DSH, the display title wins over the transcript's."""
    invoke(home, roots, "rename", SID, "my name")
    made = json.loads(invoke(home, roots, "fork", SID, "--op-id", "r", "--json"))
    assert {s.id: s.title for s in catalog(home, roots).listing().sessions}[made["child"]] == "my name (1)"


def test_a_line_outside_every_turn_is_refused(home: Home, roots: dict[str, Path]) -> None:
    refused = json.loads(invoke(home, roots, "fork", SID, "--op-id", "x", "--at", "5", "--json"))
    assert refused["error"]["code"] == "INVALID_ANCHOR"


def test_any_line_of_an_open_turn_is_refused_as_open(home: Home, tmp_path: Path) -> None:
    """A turn that cannot be branched from has no end line: its lines run to the file's end."""
    open_turn = [event("task_started", turn_id="t2"), message("user", "more"), call("c1"), call("c2")]
    lines = [meta(cwd=CWD), *turn("t1", "one", "1"), *open_turn]
    roots = {"codex": tmp_path / "sessions"}
    write(roots["codex"] / f"rollout-2026-05-01T00-00-00-{TID}.jsonl", rollout(*lines))
    codes = {}
    for at in (1, 7, 9, len(lines)):
        made = json.loads(invoke(home, roots, "fork", TID, "--op-id", f"at-{at}", "--at", str(at), "--json"))
        codes[at] = made["error"]["code"]
    assert codes == {1: "INVALID_ANCHOR", 7: "OPEN_TURN", 9: "OPEN_TURN", len(lines): "OPEN_TURN"}


def test_roots_name_their_format_or_are_recognised(
    tmp_path: Path, home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude, codex = tmp_path / "cc", tmp_path / "cx"
    (claude / "projects" / "-home-u").mkdir(parents=True)
    (codex / "sessions" / "2026").mkdir(parents=True)
    assert (
        detect_format(claude / "projects") == "claude-code" and detect_format(codex / "sessions") == "codex"
    )
    assert detect_format(tmp_path / "nothing") == "dsh"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CODEX_HOME", str(codex))
    named = SessionRootSetting(path=str(tmp_path / "mine"), format="codex")
    found = [(r.path, r.format) for r in all_roots(home, [named, str(claude / "projects")])]
    assert found == [
        (home.sessions, "dsh"),
        (tmp_path / "mine", "codex"),
        (claude / "projects", "claude-code"),
        (codex / "sessions", "codex"),  # archived_sessions does not exist: not a root
    ]


def test_a_harness_home_named_as_a_root_stands_for_its_session_folders(
    home: Home, roots: dict[str, Path]
) -> None:
    """People name `~/.codex` or `~/.claude`, not the folders inside them that hold sessions."""
    codex_home, claude_home = roots["codex"].parent, roots["claude-code"].parent
    archived = codex_home / "archived_sessions"
    write(archived / f"rollout-2026-04-01T00-00-00-{ARCHIVED}.jsonl", rollout(meta(ARCHIVED, cwd=CWD)))
    listed = json.loads(invoke(home, {"codex": codex_home, "claude-code": claude_home}, "list", "--json"))
    assert listed["errors"] == []
    found = {(s["id"], s["format"]) for s in listed["sessions"]}
    assert {(TID, "codex"), (CHILD, "codex"), (ARCHIVED, "codex"), (SID, "claude-code")} <= found
    named = [SessionRootSetting(path=str(codex_home)), str(claude_home)]
    assert [(r.path, r.format) for r in all_roots(home, named)][1:3] == [
        (codex_home / "sessions", "codex"),
        (archived, "codex"),
    ]
    assert all_roots(home, named)[3].path == claude_home / "projects"
    assert [r.path for r in all_roots(home, [str(roots["codex"])])][1] == roots["codex"], (
        "a rollout root is itself"
    )


ARCHIVED = "019c0000-0000-7000-8000-0000000000a1"
INLINE = "1e000000-0000-4000-8000-0000000001e0"


def test_inline_subagents_are_subagent_children_shown_in_their_sessions_transcript(
    home: Home, roots: dict[str, Path]
) -> None:
    lines = [{**r, "sessionId": INLINE} for r in inline_subagents()]
    write(claude_project(roots["claude-code"]) / f"{INLINE}.jsonl", jsonl(*lines))
    entries, errors = catalog(home, roots).entries(CWD)
    assert errors == []
    nodes = {n.id: n for n in build_tree(lineage_items(entries)).flat()}
    children = [n for n in nodes.values() if n.parent == INLINE]
    assert [(n.id, n.kind, n.title, n.flags, n.format) for n in children] == [
        (f"{INLINE}@s1", "subagent", "list the modules", ["inline"], "claude-code"),
        (f"{INLINE}@t1", "subagent", "find the tests", ["inline"], "claude-code"),
    ]
    # Same shape as a file's subagent (SID's agent-a1b2), whose node is not flagged inline.
    assert (nodes["agent-a1b2"].kind, nodes["agent-a1b2"].flags) == ("subagent", [])
    assert children[0].createdAt < children[1].createdAt
    rows = json.loads(invoke(home, roots, "turns", INLINE, "--json"))["turns"]
    assert [r["user"] for r in rows] == ["survey the repo", "and the tests?"]
    shown = invoke(home, roots, "show", INLINE)
    assert f"## Inline subagent `{INLINE}@s1`" in shown and "### Subagent turn 1 — completed" in shown
    assert "> three modules" in shown
    assert [turn for turn, _ in _turn_ends(shown.splitlines())] == [1, 2]
    [tree_line] = [line for line in invoke(home, roots, "tree", "--cwd", CWD).splitlines() if "@s1" in line]
    assert "subagent" in tree_line


def test_reader_problems_are_counted_on_rows_and_listed_by_show(home: Home, roots: dict[str, Path]) -> None:
    project = claude_project(roots["claude-code"])
    broken = jsonl(*conversation()[:4], b"not json\n", prompt("u1", "a2", "again"), b'{"type": "user", "uu')
    path = write(project / f"{SID}.jsonl", broken)
    listing = catalog(home, roots).listing()
    problems = {s.id: s.problems for s in listing.sessions}
    # not-json, duplicate uuid, cycle (u1 now hangs under a2), torn tail: four, on this row only
    assert problems[SID] == 4 and {n for i, n in problems.items() if i != SID} == {0}
    nodes = {n.id: n for n in build_tree(lineage_items(catalog(home, roots).entries()[0])).flat()}
    assert (nodes[SID].problems, nodes[FORK].problems) == (4, 0)
    shown = invoke(home, roots, "show", SID)
    assert "**Problems** (4, skipped or flagged while reading)" in shown
    assert "line 5 is not JSON" in shown and "line 7 has no newline: being written, or torn" in shown
    os.utime(path)  # written just now: the torn tail is the harness appending, not a problem
    assert {s.id: s.problems for s in catalog(home, roots).listing().sessions}[SID] == 3
    log = json.loads(invoke(home, roots, "show", SID, "--json"))
    assert log["header"]["problems"] == 3


def test_a_transcript_lists_the_first_problems_then_how_many_more() -> None:
    data = jsonl(*conversation()[:4], *[b"{oops\n"] * 60)
    shown = render_harness_transcript(harness_sources.claude_view(data, f"{SID}.jsonl"), data)
    listed = [line for line in shown.splitlines() if line.startswith("- line ")]
    assert len(listed) == PROBLEMS_SHOWN and listed[0].startswith("- line 5 is not JSON")
    assert "- … and 10 more" in shown and "**Problems** (60, skipped or flagged while reading)" in shown


def test_a_transcript_shows_each_prompt_whole_and_labels_it_by_its_first_line() -> None:
    asked = "fix the bug\n\nin `a.py`, and add tests" + " x" * 150
    claude = jsonl(prompt("u1", None, asked), say("a1", "u1", "done"))
    codex = rollout(meta(), *turn("t1", asked, "done"))
    for view, data in (
        (harness_sources.claude_view(claude, f"{SID}.jsonl"), claude),
        (harness_sources.codex_view(codex), codex),
    ):
        assert view.turns[0].prompt == "fix the bug", view.format
        shown = render_harness_transcript(view, data)
        assert "> fix the bug\n>\n> in `a.py`, and add tests x x" in shown, view.format
        assert shown.count(" x") == 150, view.format


def test_a_turn_heading_shows_a_time_only_when_the_file_holds_one() -> None:
    data = jsonl(prompt("u1", None, "first", timestamp="not a time"), say("a1", "u1", "done"))
    later = jsonl(prompt("u1", None, "first", timestamp="2026-01-01T00:00:05Z"), say("a1", "u1", "done"))
    for shown, stamp in ((data, "no time"), (later, "2026-01-01T00:00:05Z")):
        rendered = render_harness_transcript(harness_sources.claude_view(shown, f"{SID}.jsonl"), shown)
        assert f"## Turn 1 — completed — {stamp}\n" in rendered


@pytest.mark.parametrize("memo", [None, "memo"])
def test_a_harness_files_digest_is_hashed_when_a_review_asks_and_kept_while_unchanged(
    home: Home, roots: dict[str, Path], memo: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decision 0340: a listing leaves a Claude Code or Codex file's digest out; `digest_of`
    hashes it once, stores it for its revision, and refuses to hash a file changed since it was
    listed, or a link."""
    kept = ListingMemo(lambda: False) if memo else None
    roots_ = [Root(path, fmt) for fmt, path in roots.items()]  # type: ignore[arg-type]
    listed = SessionCatalog(home, roots_, 120, kept)
    entries = {e.summary.id: e for e in listed.entries()[0]}
    assert entries[SID].summary.digest is None and entries[TID].summary.digest is None
    assert entries["dsh-1"].summary.digest is None  # a DSH log's too (decision 0341)
    path = entries[SID].path
    hashed: list[Path] = []
    original = harness_sources.file_digest
    monkeypatch.setattr(  # the catalog hashes through `session_digest` (decision 0366)
        harness_sources, "file_digest", lambda p, **kw: hashed.append(p) or original(p, **kw)
    )
    digest = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert listed.digests([entries[SID]]) == {SID: digest}
    assert listed.digests([entries[SID]]) == {SID: digest} and hashed == [path]  # kept
    later = SessionCatalog(home, roots_, 120, kept)  # the next request: stored, not hashed again
    assert later.digests(e for e in later.entries()[0] if e.summary.id == SID) == {SID: digest}
    assert hashed == [path]
    rollout_path = entries[TID].path
    with rollout_path.open("ab") as handle:  # Codex appends: the listed entry is no longer the file
        handle.write(b"\n")
    assert listed.digest_of(entries[TID]) is None
    grown = [e for e in SessionCatalog(home, roots_, 120, kept).entries()[0] if e.summary.id == TID]
    assert grown[0].summary.digest is None
    rollout_path.unlink()
    rollout_path.symlink_to(path)
    with pytest.raises(OSError):  # never hashed through a link
        listed.digest_of(grown[0])
    assert listed.digests(grown) == {TID: None}


def test_a_rollout_with_a_number_past_what_the_index_holds_costs_no_other_session_its_row(
    home: Home, roots: dict[str, Path]
) -> None:
    """An ordinal of 10**30 failed the index's whole batch (an int past SQLite's 64 bits), and so
    every listing, tree and turns of every session."""
    day = roots["codex"] / "2026" / "05" / "01"
    base = {"thread_id": TID, "end_ordinal_exclusive": 10**30}
    write(
        day / f"rollout-2026-05-01T00-30-00-{CHILD2}.jsonl", rollout(meta(CHILD2, cwd=CWD, history_base=base))
    )
    listing = catalog(home, roots).listing()
    assert listing.errors == []
    by_id = {s.id: s for s in listing.sessions}
    assert (by_id[CHILD2].parent, by_id[CHILD2].problems) == (TID, 1) and {SID, TID, "dsh-1"} <= set(by_id)
    assert "not an ordinal (a whole number from 0 to 9007199254740991)" in invoke(home, roots, "show", CHILD2)
    assert "read the notes" in invoke(home, roots, "turns", SID)


def test_a_file_past_the_cap_on_lines_is_one_error_refused_before_a_line_is_decoded(
    home: Home, roots: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl_format, "MAX_LINES", 40)
    project = claude_project(roots["claude-code"])
    long_one = project / "33333333-0000-4000-8000-000000000000.jsonl"
    write(long_one, jsonl(*conversation()) + b'{"type": "x"}\n' * 40)
    day = roots["codex"] / "2026" / "05" / "01"
    blank = write(day / f"rollout-2026-05-01T00-30-00-{CHILD2}.jsonl", rollout(meta(CHILD2)) + b"\n" * 60)
    decoded: list[int] = []
    records = jsonl_format.records
    monkeypatch.setattr(
        jsonl_format, "records", lambda data, *a: decoded.append(len(data)) or records(data, *a)
    )
    cat = catalog(home, roots)
    listing = cat.listing()
    reasons = {Path(e.path).name: e.message for e in listing.errors}
    assert reasons == {
        long_one.name: "the file has more than 40 lines (48 read), the most a harness file may have: it is "
        "refused (far more than any real session holds; a damaged or runaway file)",
        blank.name: reasons[blank.name],
    }
    assert reasons[blank.name].startswith("the file has more than 40 lines (61 read)")
    assert {SID, TID, "dsh-1"} <= {s.id for s in listing.sessions}
    assert long_one.stat().st_size not in decoded and blank.stat().st_size not in decoded
    # A file that grows past the cap while it is followed is refused when it is listed again.
    path = project / f"{SID}.jsonl"
    with path.open("ab") as handle:
        handle.write(b'{"type": "x"}\n' * 40)
    os.utime(path, (1_600_000_100, 1_600_000_100))
    relisted = cat.listing()
    assert SID not in {s.id for s in relisted.sessions}
    assert "more than 40 lines" in {Path(e.path).name: e.message for e in relisted.errors}[path.name]


def test_a_workspaces_errors_do_not_depend_on_how_warm_the_index_is(home: Home, tmp_path: Path) -> None:
    """A rollout in both `sessions/` and `archived_sessions/` is another workspace's duplicate:
    a workspace's listing reads such rollouts only when the index has none of them, so it must
    not report them once a full listing has indexed them either."""
    sessions, archived = tmp_path / "codex" / "sessions", tmp_path / "codex" / "archived_sessions"
    name = f"rollout-2026-05-01T00-00-00-{TID}.jsonl"
    data = rollout(meta(TID, cwd="/elsewhere"), *turn("t1", "hi", "hello"))
    write(sessions / "2026" / "05" / "01" / name, data)
    write(archived / name, data)
    roots = [Root(sessions, "codex"), Root(archived, "codex")]
    cold_home, warm_home = Home(tmp_path / "cold"), Home(tmp_path / "warm")
    cold = SessionCatalog(cold_home, roots, 120).listing(CWD)
    warm = SessionCatalog(warm_home, roots, 120)
    assert len(warm.listing().errors) == 2  # the full listing reports the copy
    assert warm.listing(CWD).errors == cold.errors == []
