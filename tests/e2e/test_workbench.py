"""The extension in a real VS Code (code-server), as a person uses it: each scenario on a fresh home.

(a) opening the workspace starts the daemon, and the Session Branches view shows the sessions
    with the fork under its parent and the orphan flagged;
(b) "Remem: Consolidate Session" from the palette shows progress, then the Memory view shows the
    new record and the tree shows the session as consolidated;
(c) a record edited to a bad `type` gets a squiggle and a Problems entry; the quick fix clears both;
(d) "Branch from here" in a transcript, confirmed in the server's question, adds the child to the tree;
(e) "Remem: Show Memory History" lists an agent's change to a record, opens its diff, and "Undo this
    change", confirmed in a modal dialog, brings the record back as a new history entry.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from remem.daemon.memory.batch import CHANGES
from remem.daemon.memory.history import Actor
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.server.runtime import DaemonPaths
from tests.consolidation.conftest import proposal, put
from tests.fake_openai import Reply, tool_call

from .conftest import Scenario
from .harness import UI_TIMEOUT_MS, Workbench

pytestmark = pytest.mark.e2e

SESSIONS, MEMORY = "Session Branches", "Memory"


def label(node: dict[str, object]) -> str:
    """How the tree labels a session: its title, else "Untitled" and the id's first 8 characters."""
    title = str(node["title"] or "").strip()
    return title or f"Untitled {str(node['id']).removeprefix('session-')[:8]}"


def test_opening_the_workspace_starts_the_daemon_and_shows_the_session_tree(
    workbench: Workbench, scenario: Scenario
) -> None:
    workbench.open_container("Remem")
    main = scenario.node(scenario.main.id)
    fork = scenario.node(scenario.fork)
    orphan = scenario.node(scenario.orphan)
    workbench.row(SESSIONS, re.escape(label(main)))
    workbench.row(SESSIONS, r"orphan")
    # The status bar shows the daemon connected (the server's remem/status notification).
    workbench.status_bar_item(r"remem").locator(".codicon-check").wait_for(timeout=UI_TIMEOUT_MS)
    workbench.screenshot("session-tree")

    assert DaemonPaths(scenario.home).running(), "opening the workspace did not start the daemon"
    rows = workbench.rows(SESSIONS)
    assert len(rows) == 4, rows
    texts = [text for _, text in rows]
    main_at = next(i for i, t in enumerate(texts) if t.startswith(label(main)) and "from turn" not in t)
    fork_at = next(i for i, t in enumerate(texts) if t.startswith(label(fork)) and "from turn 2" in t)
    subagent_at = next(i for i, t in enumerate(texts) if "subagent" in t)
    orphan_at = next(i for i, t in enumerate(texts) if "orphan" in t)
    # The fork and the subagent sit one level under their parent, after it; the orphan is a
    # root of its own, flagged.
    assert min(fork_at, subagent_at) > main_at
    assert rows[fork_at][0] == rows[subagent_at][0] == rows[main_at][0] + 1
    assert rows[orphan_at][0] == rows[main_at][0]
    assert texts[orphan_at].startswith(label(orphan))


def test_consolidating_from_the_palette_shows_progress_then_the_new_record(
    workbench: Workbench, scenario: Scenario
) -> None:
    seen_progress = threading.Event()

    def answer(_body: dict[str, object]) -> Reply:
        # Held until the test has seen the progress notification: no race with a fast model.
        seen_progress.wait(timeout=60)
        return tool_call(proposal(put("prefer-uv", scenario.main.evidence())), reasoning="Clear evidence.")

    scenario.fake.reply_with(answer)
    try:
        workbench.open_container("Remem")
        workbench.row(SESSIONS, re.escape(label(scenario.node(scenario.main.id))))
        workbench.run_command("Remem: Consolidate Session")
        picks = workbench.quick_pick_rows("Remem: Consolidate Session")
        # Eligible sessions (all four are finished), newest first, with their age and review state.
        newest_first = [n["id"] for n in sorted(scenario.tree(), key=lambda n: -n["createdAt"])]
        assert [next((i for i in newest_first if i in p), p) for p in picks] == newest_first, picks
        assert all(re.search(r" ago · not consolidated yet", p) for p in picks), picks
        workbench.screenshot("consolidate-pick")
        workbench.quick_pick(re.escape(scenario.main.id))
        workbench.notification(r"Remem: consolidating")
        workbench.screenshot("consolidation-progress")
    finally:
        seen_progress.set()
    workbench.notification(r"1 change")
    workbench.row(MEMORY, r"prefer-uv")
    workbench.row(SESSIONS, r"✓ consolidated")
    workbench.screenshot("consolidation-result")
    assert scenario.fake.count == 1
    assert scenario.node(scenario.main.id)["review"]["state"] == "consolidated"


def test_a_bad_record_type_gets_a_squiggle_and_a_problem_until_the_quick_fix(
    workbench: Workbench, scenario: Scenario
) -> None:
    record = _seed_record(scenario)
    workbench.open_container("Remem")
    workbench.row(MEMORY, r"prefer-uv").click()
    editor = workbench.editor("prefer-uv.md")
    type_line = record.read_text().splitlines().index("type: feedback") + 1
    workbench.replace_line(type_line, "type: Feedback")
    # Typing goes key by key, so the half-typed line may be flagged (as bad YAML) first: wait
    # for the problem of the finished line.
    workbench.problems()
    flagged = workbench.page.locator(".markers-panel .monaco-list-row", has_text="remem/type-invalid")
    flagged.first.wait_for(timeout=UI_TIMEOUT_MS)
    squiggle = workbench.page.locator(".monaco-editor .squiggly-error")
    squiggle.first.wait_for(timeout=UI_TIMEOUT_MS)
    problems = workbench.problems()
    assert any("remem/type-invalid" in p and "feedback" in p for p in problems), problems
    workbench.screenshot("record-diagnostics")

    workbench.go_to(type_line, len("type: ") + 2)  # inside the flagged value
    workbench.page.keyboard.press("Control+.")
    fix = workbench.page.locator(".action-widget .monaco-list-row", has_text=re.compile(r"feedback"))
    fix.first.wait_for(timeout=UI_TIMEOUT_MS)
    workbench.screenshot("record-quick-fix")
    fix.first.click()
    squiggle.first.wait_for(state="detached", timeout=UI_TIMEOUT_MS)
    workbench.page.locator(".markers-panel .monaco-list-row").first.wait_for(
        state="detached", timeout=UI_TIMEOUT_MS
    )
    assert "type: feedback" in workbench.text_of(editor)
    workbench.screenshot("record-fixed")


def test_branch_from_here_in_a_transcript_adds_the_child_to_the_tree(
    workbench: Workbench, scenario: Scenario
) -> None:
    turns = scenario.turns(scenario.main.id)
    first = next(t["turn"] for t in turns if t["forkable"])  # the first "Branch from here" lens
    workbench.open_container("Remem")
    workbench.row(SESSIONS, re.escape(label(scenario.node(scenario.main.id))))
    branched_rows = rf"from turn {first}\b"
    before = workbench.count_rows(SESSIONS, branched_rows)
    workbench.run_command("Remem: Open Session Transcript")
    workbench.quick_pick(re.escape(scenario.main.id))
    workbench.editor(f"{scenario.main.id}.md")
    lens = workbench.page.locator(".codelens-decoration a", has_text="Branch from here")
    lens.first.wait_for(timeout=UI_TIMEOUT_MS)
    workbench.screenshot("transcript-lenses")
    lens.first.click()
    question = workbench.notification(r"copies the conversation only")
    workbench.screenshot("branch-question")
    question.locator(".monaco-button", has_text=re.compile(r"^Branch$")).first.click()
    workbench.wait_rows(SESSIONS, branched_rows, before + 1)
    workbench.screenshot("branch-added")
    children = [n for n in scenario.tree() if n["parent"] == scenario.main.id and n["kind"] == "fork"]
    assert sorted(n["forkTurn"] for n in children) == sorted([2, first])  # the seeded fork and the new one


def test_memory_history_shows_an_agents_change_as_a_diff_and_undoes_it(
    workbench: Workbench, scenario: Scenario
) -> None:
    record = _seed_record(scenario)
    original = record.read_text()
    store = MemoryStore(scenario.home)
    workspace = WorkspaceId.from_cwd(scenario.project)
    [put] = CHANGES.validate_python([_RECORD])
    put.record.content = "Run every tool with uv; pip is never used here.\n"  # type: ignore[union-attr]
    agent = Actor(kind="agent", session="6c1f9a0b2d3e4f50", client="claude-code/2.1")
    assert store.commit_workspace(workspace, store.read_workspace(workspace).revision, [put], agent).history
    workbench.open_container("Remem")
    workbench.row(MEMORY, r"prefer-uv")

    workbench.run_command("Remem: Show Memory History")
    rows = workbench.quick_pick_rows("Remem: History of")
    assert [r.split(" ")[0] for r in rows] == ["Agent", "remem"], rows
    workbench.screenshot("history-pick")
    workbench.quick_pick(r"claude-code/2\.1")
    diff = workbench.page.locator(".editor-instance .monaco-diff-editor")
    diff.first.wait_for(timeout=UI_TIMEOUT_MS)
    inserted = workbench.page.locator(".monaco-diff-editor .line-insert, .monaco-diff-editor .char-insert")
    inserted.first.wait_for(timeout=UI_TIMEOUT_MS)  # both sides were read from the history
    toast = workbench.notification(r"changed prefer-uv\.md")
    workbench.screenshot("history-diff")
    toast.locator(".monaco-button", has_text="Undo this change").first.click()
    dialog = workbench.page.locator(".monaco-dialog-box", has_text="Undo this change?")
    dialog.first.wait_for(timeout=UI_TIMEOUT_MS)
    workbench.screenshot("history-undo-question")
    dialog.locator(".monaco-button", has_text="Undo this change").first.click()
    workbench.notification(r"^Undone\.")
    assert record.read_text() == original
    newest = store.history.log(workspace.key)[0]
    assert newest.actor.kind == "revert" and newest.after == store.read_workspace(workspace).revision


_RECORD = {
    "action": "put",
    "record": {
        "name": "prefer-uv",
        "description": "Use uv to run Python tools",
        "type": "feedback",
        "content": "Run tools with uv, never with pip.\n",
    },
}


def _seed_record(scenario: Scenario) -> Path:
    """One valid record in the workspace's memory, committed as remem does."""
    store = MemoryStore(scenario.home)
    workspace = WorkspaceId.from_cwd(scenario.project)
    result = store.commit_workspace(
        workspace, store.read_workspace(workspace).revision, CHANGES.validate_python([_RECORD])
    )
    assert result.status == "committed"
    return store.folder(workspace) / "prefer-uv.md"
