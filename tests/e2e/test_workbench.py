"""The extension in a real VS Code (code-server), as a person uses it: each scenario on a fresh home.

(a) opening the workspace starts the daemon, and the Session Branches view shows the sessions
    with the fork under its parent and the orphan flagged;
(b) "Remem: Consolidate Session" from the palette shows progress, then the result naming the session
    and the record (with "Show Diff", which opens the record before and after), the new record in
    the Memory view and the session as consolidated in the tree; consolidating it again says it
    was already reviewed; its receipt opens rendered, a click on its evidence opens the
    transcript at the turn, and so does the record's provenance lens;
(j) "Select Consolidation Model" says the route has its key and offers the models the provider lists;
(c) a record edited to a bad `type` gets a squiggle, a Problems entry remem(type-invalid) and its
    problem in the Memory view before it is saved; the quick fix clears them, and another renames
    a misspelled key (`descripton`) to the key it stands for;
(d) "Branch after turn N" in a transcript asks the extension's modal question, adds the child to
    the tree and opens it, headed as its tab reads (so is a branch opened from its row); from
    the palette, "Branch from Turn…" offers the session open in the editor first and asks the
    same question;
(f) without an API key, "Consolidate Session" offers Open Settings (settings.yml opens), Select
    Consolidation Model (whose picker says the route has no key yet) and Enter API Key… (stored 0600), after
    which it consolidates and Open Record opens the new record;
(g) a consolidation cancelled from its progress reads as cancelled, not failed;
(h) on a tree row F2 renames (the transcript's heading and tab follow, so does an open receipt's
    tab, and its branch keeps its own name), Delete archives (the row hides until "Show Archived
    Sessions", then shows dimmed), Shift+Delete restores; the palette's Rename, Archive and
    Restore do the same;
(e) a folder without sessions says so only once the server answered, naming where remem looked, and
    a window loaded again draws the tree kept from the last one, then the server's; with the
    server held back, both views show their loading rows, and after a reload the kept tree marked
    "refreshing…" until the server answers.
(i) "Remem: Show Memory History" lists an agent's change to a record, opens its diff, and "Undo this
    change", confirmed in a modal dialog, brings the record back as a new history entry.
(k) a Claude Code transcript and a Codex rollout in the harnesses' own folders show in the tree
    beside the DSH sessions, badged by harness, the Claude Code rewind as a branch under its session;
    the row's branch button branches it, and Copy Resume Command copies `claude --resume <child>`;
(l) invalid memory refuses a consolidation with Show Problems, which opens the file and lists its
    problem; a failed attempt's message and rendered receipt say why, with the URL it asked;
(m) the demo, seeded as `scripts/demo` seeds it, consolidates in the editor through its scripted
    model, with no key, and both records it learns show in the Memory view.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Locator
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from remem.daemon.memory.batch import CHANGES
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import Actor
from remem.daemon.server.runtime import DaemonPaths
from remem.daemon.sessions.reader import read_session
from remem.daemon.sessions.transcript import render_transcript
from scripts import demo_model
from scripts.codeserver import REPO, remem_executable
from scripts.seed_demo import DemoSessions, seed
from tests.consolidation.conftest import KEY_ENV, proposal, put
from tests.fake_openai import Reply, status, tool_call
from tests.sessions import claude_lines, codex_lines

from .conftest import Scenario
from .harness import UI_TIMEOUT_MS, Workbench

pytestmark = pytest.mark.e2e

SESSIONS, MEMORY = "Session Branches", "Memory"


def label(node: dict[str, object]) -> str:
    """How the tree labels a session: its title, else "Untitled" and the id's first 8 characters."""
    title = str(node["title"] or "").strip()
    return title or f"Untitled {str(node['id']).removeprefix('session-')[:8]}"


def fork_label(scenario: Scenario) -> str:
    """How the tree labels the scenario's fork: its fork point and its own first prompt."""
    fork = scenario.node(scenario.fork)
    own = next(t["user"] for t in scenario.turns(scenario.fork) if t["turn"] > fork["forkTurn"])
    return f"After turn {fork['forkTurn']} · {own.splitlines()[0][:40]}"


def test_opening_the_workspace_starts_the_daemon_and_shows_the_session_tree(
    workbench: Workbench, scenario: Scenario
) -> None:
    workbench.open_container("Remem")
    main = scenario.node(scenario.main.id)
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
    main_at = next(i for i, t in enumerate(texts) if t.startswith(label(main)))
    # A branch is named by its fork point and its own first prompt, not its parent's title again.
    fork_at = next(i for i, t in enumerate(texts) if t.startswith(fork_label(scenario)))
    subagent_at = next(i for i, t in enumerate(texts) if "subagent" in t)
    orphan_at = next(i for i, t in enumerate(texts) if "orphan" in t)
    # The fork and the subagent sit one level under their parent, after it; the orphan is a
    # root of its own, flagged.
    assert min(fork_at, subagent_at) > main_at
    assert rows[fork_at][0] == rows[subagent_at][0] == rows[main_at][0] + 1
    assert rows[orphan_at][0] == rows[main_at][0]
    assert texts[orphan_at].startswith("After turn 1 · ") and orphan["kind"] == "fork"


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
        # Eligible sessions (all four are finished; the subagent is reviewed with its parent),
        # newest first, with their age and review state.
        eligible = [n for n in scenario.tree() if n["kind"] != "subagent"]
        newest_first = [n["id"] for n in sorted(eligible, key=lambda n: -n["createdAt"])]
        assert [next((i for i in newest_first if i in p), p) for p in picks] == newest_first, picks
        assert all(re.search(r" ago · not consolidated yet", p) for p in picks), picks
        workbench.screenshot("consolidate-pick")
        workbench.quick_pick(re.escape(scenario.main.id))
        # The phase says what happens now: the fake model holds its answer until this is seen.
        workbench.notification(r"Remem: consolidating.*Waiting for the model \(step 1\)…")
        workbench.screenshot("consolidation-progress")
    finally:
        seen_progress.set()
    title = re.escape(label(scenario.node(scenario.main.id)))
    said = rf"Consolidated “{title}”: 1 change to memory — added prefer-uv \(feedback\)"
    workbench.notification(said)
    workbench.row(MEMORY, r"prefer-uv")
    workbench.row(SESSIONS, r"✓ consolidated")
    workbench.screenshot("consolidation-result")
    assert scenario.fake.count == 1
    assert scenario.node(scenario.main.id)["review"]["state"] == "consolidated"
    # "Show Diff": the record before (nothing) and after, read from the review's history entry.
    workbench.notification_button(said, "Show Diff")
    workbench.page.locator(".editor-instance .monaco-diff-editor").first.wait_for(timeout=UI_TIMEOUT_MS)
    inserted = workbench.page.locator(".monaco-diff-editor .line-insert, .monaco-diff-editor .char-insert")
    inserted.first.wait_for(timeout=UI_TIMEOUT_MS)
    workbench.editor("prefer-uv.md: Consolidation")
    workbench.screenshot("consolidation-diff")
    # Consolidating the reviewed session again asks no model and says so.
    workbench.run_command("Remem: Consolidate Session")
    workbench.quick_pick(re.escape(scenario.main.id))
    again = rf"“{title}” was already reviewed: 1 change to memory then — added"
    workbench.notification(again)
    assert scenario.fake.count == 1
    # The receipt opens rendered, its tab named by the session: status, the change, the route.
    workbench.notification_button(again, "Open Receipt")
    name = label(scenario.node(scenario.main.id))
    workbench.page.locator(".tabs-container .tab", has_text=f"Receipt: {name}").first.wait_for(
        timeout=UI_TIMEOUT_MS
    )
    preview = workbench.webview()
    preview.locator("h1", has_text=f"Review of “{name}”").wait_for(timeout=UI_TIMEOUT_MS)
    assert "Added prefer-uv (feedback)" in preview.locator("body").inner_text()
    workbench.screenshot("receipt-view")
    # Its evidence links open the transcript at the turn's heading (the put cites turn 1).
    heading = _heading_line(scenario, 1)
    link = preview.locator("a", has_text=re.compile(r"^turn 1$")).first
    link.click()
    workbench.page.locator(".tabs-container .tab.active", has_text=f"{name}.md").wait_for(
        timeout=UI_TIMEOUT_MS
    )
    workbench.status_bar_item(rf"Ln {heading}, Col 1")
    workbench.screenshot("receipt-evidence-transcript")
    workbench.go_to(1)  # away from the turn, so the lens below is seen to bring the cursor back
    workbench.status_bar_item(r"Ln 1, Col 1")
    # The record's provenance lens opens the transcript at its turn too.
    workbench.row(MEMORY, r"prefer-uv").click()
    workbench.editor("prefer-uv.md")
    lens = workbench.page.locator(".codelens-decoration a", has_text=f"from {name}, turn")
    lens.first.wait_for(timeout=UI_TIMEOUT_MS)
    workbench.screenshot("provenance-lens")
    lens.first.click()
    workbench.page.locator(".tabs-container .tab.active", has_text=f"{name}.md").wait_for(
        timeout=UI_TIMEOUT_MS
    )
    workbench.status_bar_item(rf"Ln {heading}, Col 1")
    workbench.screenshot("provenance-transcript")


def _heading_line(scenario: Scenario, turn: int) -> int:
    """The 1-based line of turn `turn`'s heading in the main session's transcript."""
    lines = render_transcript(read_session(scenario.main.path)).splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.startswith(f"## Turn {turn} — "))


def test_select_model_offers_the_models_the_provider_lists_and_says_the_key_is_there(
    workbench: Workbench, scenario: Scenario
) -> None:
    scenario.fake.list_models(["fake-model", "fake-large"])
    workbench.open_container("Remem")
    workbench.run_command("Remem: Select Consolidation Model")
    workbench.quick_pick(r"^fake")
    rows = workbench.quick_pick_rows("Remem: model of fake — its route has a key")
    # The current model first, then the others listed, then a way to type one the list lacks.
    assert rows[0].startswith("fake-model") and rows[1] == "fake-large", rows
    assert rows[2].startswith("Type a model id…") and len(rows) == 3, rows
    workbench.screenshot("model-pick")
    workbench.quick_pick(r"^fake-large")
    workbench.notification(r"Consolidation now uses fake / fake-large; its API key is set\.")
    assert "model: fake-large" in scenario.home.settings_file.read_text()


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
    flagged = workbench.page.locator(".markers-panel .monaco-list-row", has_text="type-invalid")
    flagged.first.wait_for(timeout=UI_TIMEOUT_MS)
    squiggle = workbench.page.locator(".monaco-editor .squiggly-error")
    squiggle.first.wait_for(timeout=UI_TIMEOUT_MS)
    problems = workbench.problems()
    shown_as = re.compile(r"remem\W*type-invalid")  # remem(type-invalid): the parentheses are CSS
    assert any(shown_as.search(p) and "feedback" in p for p in problems), problems
    # The code links to the rule's row of docs/memory-format.md.
    link = flagged.first.locator("a", has_text="type-invalid")
    assert "memory-format.md#L" in str(link.get_attribute("title") or link.get_attribute("href") or ""), (
        link.evaluate("e => e.outerHTML")
    )
    workbench.row(MEMORY, r"prefer-uv.*Feedback · 1 problem")  # the view sees the unsaved edit too
    workbench.screenshot("record-diagnostics")

    workbench.go_to(type_line, len("type: ") + 2)  # inside the flagged value
    fix = _quick_fix(workbench, re.compile(r"feedback"))
    workbench.screenshot("record-quick-fix")
    fix.first.click()
    squiggle.first.wait_for(state="detached", timeout=UI_TIMEOUT_MS)
    workbench.page.locator(".markers-panel .monaco-list-row").first.wait_for(
        state="detached", timeout=UI_TIMEOUT_MS
    )
    assert "type: feedback" in workbench.text_of(editor)
    workbench.row(MEMORY, r"prefer-uv.*feedback · valid")
    workbench.screenshot("record-fixed")

    # A misspelled key: the quick fix renames it to the key it stands for.
    lines = record.read_text().splitlines()
    description_line = next(n for n, line in enumerate(lines, 1) if line.startswith("description:"))
    misspelled = lines[description_line - 1].replace("description:", "descripton:")
    workbench.replace_line(description_line, misspelled)
    squiggle.first.wait_for(timeout=UI_TIMEOUT_MS)
    workbench.go_to(description_line, 3)  # inside the misspelled key
    rename = _quick_fix(workbench, "Rename the key to")
    assert "description" in rename.first.inner_text()
    rename.first.click()
    squiggle.first.wait_for(state="detached", timeout=UI_TIMEOUT_MS)
    assert lines[description_line - 1] in workbench.text_of(editor)


def _quick_fix(workbench: Workbench, named: str | re.Pattern[str]) -> Locator:
    """The quick fix `named` at the cursor, its menu open. Ctrl+. pressed before the server
    answered for the latest edit shows the fixes of the one before, or "no code actions" (seen
    under load; a light bulb of the previous edit may still show): the menu is opened again
    until the fix is in it, within the UI bound."""
    # The bulb sits in the text, or in the gutter when the line leaves it no room.
    bulb = ".monaco-editor .lightBulbWidget .codicon, .monaco-editor [class*='gutter-lightbulb']"
    fix = workbench.page.locator(".action-widget .monaco-list-row", has_text=named)
    deadline = time.monotonic() + UI_TIMEOUT_MS / 1000
    while True:
        workbench.page.locator(bulb).first.wait_for(timeout=UI_TIMEOUT_MS)
        workbench.page.keyboard.press("Control+.")
        try:
            fix.first.wait_for(timeout=_MENU_MS)
            return fix
        except PlaywrightTimeoutError:
            if time.monotonic() > deadline:
                raise
            workbench.page.keyboard.press("Escape")


_MENU_MS = 3_000  # for an open quick-fix menu to list a fix the server already offers


def test_branch_from_here_in_a_transcript_adds_the_child_to_the_tree(
    workbench: Workbench, scenario: Scenario
) -> None:
    turns = scenario.turns(scenario.main.id)
    first = next(t["turn"] for t in turns if t["forkable"])  # the first "Branch from here" lens
    workbench.open_container("Remem")
    workbench.row(SESSIONS, re.escape(label(scenario.node(scenario.main.id))))
    branched_rows = rf"^After turn {first} · "
    before = workbench.count_rows(SESSIONS, branched_rows)
    workbench.run_command("Remem: Open Session Transcript")
    workbench.quick_pick(re.escape(scenario.main.id))
    workbench.editor(f"{label(scenario.node(scenario.main.id))}.md")  # the tab reads the title
    lens = workbench.page.locator(".codelens-decoration a", has_text=f"Branch after turn {first}")
    lens.first.wait_for(timeout=UI_TIMEOUT_MS)
    workbench.screenshot("transcript-lenses")
    lens.first.click()
    # The same modal question as from the palette and the tree.
    question = workbench.page.locator(".monaco-dialog-box", has_text="copies the conversation only")
    question.wait_for(timeout=UI_TIMEOUT_MS)
    assert f"Branch the session after turn {first}?" in question.inner_text()
    workbench.screenshot("branch-question")
    question.locator(".monaco-button", has_text=re.compile(r"^Branch$")).first.click()
    workbench.notification(r"Branched .* the new session is open")
    workbench.wait_rows(SESSIONS, branched_rows, before + 1)
    # The child opened; once the tree shows it, its tab and heading read as its row does (it
    # opened as "After turn N of <parent>", the name it had before the tree knew it).
    tab = workbench.page.locator(".tabs-container .tab.active", has_text=f"After turn {first} · ")
    tab.wait_for(timeout=UI_TIMEOUT_MS)
    _heading(workbench, f"After turn {first} · ")
    old_tab = workbench.page.locator(".tabs-container .tab", has_text=f"After turn {first} of ")
    old_tab.wait_for(state="detached", timeout=UI_TIMEOUT_MS)  # closed once the new one is open
    workbench.screenshot("branch-added")
    # A branch opened from its row is headed as the row reads.
    workbench.row(SESSIONS, f"^{re.escape(fork_label(scenario))}").click()
    workbench.editor(fork_label(scenario))
    _heading(workbench, fork_label(scenario))
    children = [n for n in scenario.tree() if n["parent"] == scenario.main.id and n["kind"] == "fork"]
    assert sorted(n["forkTurn"] for n in children) == sorted([2, first])  # the seeded fork and the new one


def _heading(workbench: Workbench, text: str) -> None:
    """Wait until the active transcript shows the heading `# <text>…`."""
    # A string, not a pattern: the editor draws spaces as no-break spaces, which only it normalizes.
    heading = workbench.page.locator(".editor-instance .view-line", has_text=f"# {text}")
    heading.first.wait_for(timeout=UI_TIMEOUT_MS)


def test_branching_from_the_palette_offers_the_open_transcript_first_and_asks_the_same_question(
    workbench: Workbench, scenario: Scenario
) -> None:
    main = scenario.node(scenario.main.id)
    last = max(t["turn"] for t in scenario.turns(scenario.main.id) if t["forkable"])
    workbench.open_container("Remem")
    workbench.row(SESSIONS, re.escape(label(main)))
    branched_rows = rf"^After turn {last} · "
    before = workbench.count_rows(SESSIONS, branched_rows)
    workbench.run_command("Remem: Open Session Transcript")
    workbench.quick_pick(re.escape(scenario.main.id))
    workbench.editor(f"{label(main)}.md")
    workbench.run_command("Remem: Branch from Turn…")
    # The session open in the editor comes first, said to be open: Enter picks it.
    first = workbench.quick_pick_rows("Remem: Branch from Turn…")[0]
    assert first.startswith(label(main)) and "open in the editor" in first, first
    workbench.page.keyboard.press("Enter")
    workbench.quick_pick(rf"^Turn {last}(?!\d)")  # the row's text runs on into its status
    # The same modal question as from the lens and the tree.
    question = workbench.page.locator(".monaco-dialog-box", has_text="copies the conversation only")
    question.wait_for(timeout=UI_TIMEOUT_MS)
    assert f"Branch the session after turn {last}?" in question.inner_text()
    question.locator(".monaco-button", has_text=re.compile(r"^Branch$")).first.click()
    done = workbench.notification(r"Branched .* the new session is open")
    done.locator(".monaco-button", has_text="Copy Session Id").first.wait_for(timeout=UI_TIMEOUT_MS)
    workbench.editor(f"After turn {last} ")  # "… of <parent>", then the row's name
    workbench.wait_rows(SESSIONS, branched_rows, before + 1)


def test_an_empty_folder_says_where_remem_looked_and_a_reload_draws_the_kept_tree(
    workbench: Workbench, scenario: Scenario, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    workbench.open_folder(elsewhere)
    workbench.open_container("Remem")
    workbench.row(SESSIONS, r"No agent sessions of this workspace were found")
    rows = [text for _, text in workbench.rows(SESSIONS)]
    assert any("Claude Code, Codex and DSH" in r for r in rows), rows
    assert any(r.startswith("Looked in ") and str(scenario.root) in r for r in rows), rows
    assert any(r.startswith("Open settings.yml") for r in rows), rows
    workbench.screenshot("empty-state")
    workbench.row(SESSIONS, r"^Open settings\.yml").click()
    workbench.editor("settings.yml")

    main = re.escape(label(scenario.node(scenario.main.id)))
    workbench.open_folder(scenario.project)
    workbench.open_container("Remem")
    workbench.row(SESSIONS, main)
    workbench.wait_view_description(SESSIONS, "")  # the server has answered
    workbench.open_folder(scenario.project)  # loaded again: the kept tree, then the server's answer
    workbench.show_container("Remem")
    workbench.row(SESSIONS, main)
    workbench.wait_view_description(SESSIONS, "")
    assert not workbench.count_rows(SESSIONS, r"No agent sessions|Loading")


@dataclass(frozen=True)
class Gate:
    """While `path` is missing, the editor's language server cannot start: its `remem.command`
    (the project's workspace setting) waits for the file before it runs remem."""

    path: Path

    def open(self) -> None:
        self.path.touch()

    def close(self) -> None:
        self.path.unlink()


@pytest.fixture
def gate(scenario: Scenario, tmp_path: Path) -> Gate:
    """A closed gate; asked for before `workbench`, so that the first window's server waits too."""
    gate = Gate(tmp_path / "gate")
    launcher = tmp_path / "gated-remem"
    launcher.write_text(
        f'#!/bin/sh\nwhile [ ! -e "{gate.path}" ]; do sleep 0.1; done\nexec "{remem_executable()}" "$@"\n'
    )
    launcher.chmod(0o755)
    settings = scenario.project / ".vscode" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"remem.command": str(launcher)}))
    return gate


def test_the_tree_says_it_is_loading_and_a_reload_draws_the_kept_tree_at_once(
    gate: Gate, workbench: Workbench, scenario: Scenario
) -> None:
    main = re.escape(label(scenario.node(scenario.main.id)))
    workbench.open_container("Remem")
    # No server yet: the view says it is loading, never that there are no sessions.
    workbench.row(SESSIONS, r"^Loading the sessions of this workspace…")
    workbench.wait_view_description(SESSIONS, "")  # nothing shown yet is being refreshed
    workbench.row(MEMORY, r"^Loading memory…")  # so does the Memory view
    workbench.screenshot("tree-loading")
    assert not workbench.count_rows(SESSIONS, r"No agent sessions")
    gate.open()
    workbench.row(SESSIONS, main)
    workbench.row(MEMORY, r"^GLOBAL\.md")
    assert not workbench.count_rows(MEMORY, r"Loading")
    workbench.wait_view_description(SESSIONS, "")
    assert not workbench.count_rows(SESSIONS, r"Loading")

    # Loaded again with the server held back: the tree kept from the last window, marked as
    # refreshing, until the server answers.
    gate.close()
    workbench.reload_window()
    workbench.row(SESSIONS, main)
    workbench.wait_view_description(SESSIONS, "refreshing…")
    assert not workbench.count_rows(SESSIONS, r"Loading|No agent sessions")
    workbench.screenshot("tree-kept")
    gate.open()
    workbench.wait_view_description(SESSIONS, "")
    workbench.row(SESSIONS, main)


def test_without_a_key_consolidation_asks_for_one_first_then_runs(
    workbench: Workbench, scenario: Scenario
) -> None:
    settings = scenario.home.settings_file
    settings.write_text(settings.read_text().replace(KEY_ENV, "REMEM_E2E_UNSET_KEY"))  # no key now
    scenario.fake.reply_with(lambda _body: tool_call(proposal(put("prefer-uv", scenario.main.evidence()))))
    workbench.open_container("Remem")
    workbench.row(SESSIONS, re.escape(label(scenario.node(scenario.main.id))))
    workbench.run_command("Remem: Consolidate Session")
    warning = workbench.notification(r"cannot consolidate yet: no API key .*REMEM_E2E_UNSET_KEY")
    workbench.screenshot("no-key")
    assert {"Enter API Key…", "Select Consolidation Model", "Open Settings"} <= set(
        warning.locator(".monaco-button").all_inner_texts()
    )
    warning.locator(".monaco-button", has_text="Open Settings").click()
    workbench.editor("settings.yml")
    no_key = r"cannot consolidate yet: no API key .*REMEM_E2E_UNSET_KEY"
    workbench.run_command("Remem: Consolidate Session")
    workbench.notification(no_key).locator(".monaco-button", has_text="Select Consolidation Model").click()
    workbench.quick_pick(r"^fake")  # the provider, then its models: the picker says there is no key yet
    picker = workbench.page.locator(".quick-input-widget .quick-input-title", has_text="no API key yet")
    picker.wait_for(timeout=UI_TIMEOUT_MS)
    workbench.page.keyboard.press("Escape")
    workbench.run_command("Remem: Consolidate Session")
    warning = workbench.notification(no_key)
    warning.locator(".monaco-button", has_text="Enter API Key…").click()
    box = workbench.page.locator(".quick-input-widget input")
    box.wait_for(timeout=UI_TIMEOUT_MS)
    assert box.get_attribute("type") == "password"
    box.fill("sk-test")  # what the fake model accepts
    box.press("Enter")
    workbench.quick_pick_rows("Remem: Consolidate Session")
    workbench.quick_pick(re.escape(scenario.main.id))
    workbench.notification_button(r"1 change", "Open Record")
    workbench.editor("prefer-uv.md")  # the record the consolidation added
    credentials = scenario.home.credentials_file
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600 and "sk-test" in credentials.read_text()


def test_a_cancelled_consolidation_reads_as_cancelled(workbench: Workbench, scenario: Scenario) -> None:
    released = threading.Event()

    def answer(_body: dict[str, object]) -> Reply:
        released.wait(timeout=60)  # never answers before the test cancels
        return tool_call(proposal(put("prefer-uv", scenario.main.evidence())))

    scenario.fake.reply_with(answer)
    try:
        workbench.open_container("Remem")
        workbench.row(SESSIONS, re.escape(label(scenario.node(scenario.main.id))))
        workbench.run_command("Remem: Consolidate Session")
        workbench.quick_pick(re.escape(scenario.main.id))
        progress = workbench.notification(r"Waiting for the model \(step 1\)…")
        progress.locator(".monaco-button", has_text="Cancel").click()
        # The run's own answer says what happened (decision 0352), here before any commit.
        workbench.notification(r"Consolidation of .* cancelled: 0 changes to memory")
        workbench.row(SESSIONS, r"○ consolidation cancelled")
        workbench.screenshot("consolidation-cancelled")
    finally:
        released.set()
    assert not workbench.count_rows(SESSIONS, r"consolidation failed")
    assert scenario.node(scenario.main.id)["review"]["status"] == "cancelled"


def test_invalid_memory_shows_its_problems_and_a_failure_names_the_url_it_tried(
    workbench: Workbench, scenario: Scenario
) -> None:
    record = _seed_record(scenario)
    valid = record.read_text()
    record.write_text(valid.replace("type: feedback", "type: Feedback"))
    workbench.open_container("Remem")
    workbench.row(SESSIONS, re.escape(label(scenario.node(scenario.main.id))))
    workbench.run_command("Remem: Consolidate Session")
    workbench.quick_pick(re.escape(scenario.main.id))
    refusal = r"Not consolidated: memory has 1 problem\(s\) in 1 file\(s\)"
    workbench.notification(refusal)
    workbench.notification_button(refusal, "Show Problems")
    # The file to fix is opened and the Problems panel lists its problem.
    workbench.editor("prefer-uv.md")
    workbench.page.locator(".markers-panel .monaco-list-row", has_text="type-invalid").first.wait_for(
        timeout=UI_TIMEOUT_MS
    )
    workbench.screenshot("invalid-memory-problems")
    assert scenario.fake.count == 0

    record.write_text(valid)
    scenario.fake.reply_with(lambda _body: status(400, "The model `fake-model` does not exist"))
    workbench.run_command("Remem: Consolidate Session")
    workbench.quick_pick(re.escape(scenario.main.id))
    # The toast says why, the URL it asked included.
    failed = rf"ended provider-failed \(.*asked {re.escape(scenario.fake.base_url)}\).*does not exist"
    workbench.notification(failed)
    workbench.notification_button(failed, "Open Receipt")
    preview = workbench.webview()
    preview.locator("h1", has_text="Review of").wait_for(timeout=UI_TIMEOUT_MS)
    body = preview.locator("body").inner_text()
    # The reason, with the URL it tried, above the machine fields.
    assert "does not exist" in body and f"asked {scenario.fake.base_url}" in body, body
    assert body.index("asked") < body.index("Machine fields"), body
    workbench.screenshot("receipt-failed")


def test_rename_archive_and_restore_from_the_keyboard(workbench: Workbench, scenario: Scenario) -> None:
    before = label(scenario.node(scenario.main.id))
    orphan = r"^After turn 1 · .*orphan"
    workbench.open_container("Remem")
    workbench.row(SESSIONS, re.escape(before))
    # A receipt of the session, open in its tab, named by the title.
    scenario.fake.reply_with(lambda _body: tool_call(proposal(put("prefer-uv", scenario.main.evidence()))))
    scenario.consolidate(scenario.main.id)
    workbench.run_command("Remem: Show Receipt")
    workbench.quick_pick(re.escape(before))
    tabs = workbench.page.locator(".tabs-container .tab")
    tabs.filter(has_text=f"Receipt: {before}").first.wait_for(timeout=UI_TIMEOUT_MS)
    workbench.row(SESSIONS, re.escape(before)).click()  # a click opens the transcript, named by the title
    workbench.editor(f"{before}.md")
    _select(workbench, re.escape(before))
    workbench.page.keyboard.press("F2")
    box = workbench.page.locator(".quick-input-widget input")
    box.wait_for(timeout=UI_TIMEOUT_MS)
    assert box.input_value() == before  # prefilled with the title
    box.fill("Move the uploader to the queue")
    box.press("Enter")
    workbench.row(SESSIONS, r"^Move the uploader to the queue")
    # The open transcript follows: its tab is named by the new title, its heading reads it.
    tabs.filter(has_text="Move the uploader to the queue.md").first.wait_for(timeout=UI_TIMEOUT_MS)
    tabs.filter(has_text=f"{before}.md").first.wait_for(state="detached", timeout=UI_TIMEOUT_MS)
    heading = workbench.editor("Move the uploader to the queue")
    _heading(workbench, "Move the uploader to the queue")
    assert "Move the uploader to the queue" in workbench.text_of(heading)
    # So do the open receipt's tab and the receipt in the Memory view.
    tabs.filter(has_text="Receipt: Move the uploader to the queue").first.wait_for(timeout=UI_TIMEOUT_MS)
    tabs.filter(has_text=f"Receipt: {before}").first.wait_for(state="detached", timeout=UI_TIMEOUT_MS)
    workbench.row(MEMORY, r"^Move the uploader to the queue")
    # Its branch keeps its own name: not the parent's old title, which its log still carries.
    workbench.row(SESSIONS, f"^{re.escape(fork_label(scenario))}")
    assert workbench.count_rows(SESSIONS, re.escape(before)) == 0
    workbench.screenshot("renamed-transcript")

    _select(workbench, orphan)
    workbench.page.keyboard.press("Delete")
    workbench.wait_view_description(SESSIONS, "1 archived hidden")
    # The header is told before the rows are redrawn: wait for the row to go, don't sample it.
    workbench.wait_rows(SESSIONS, orphan, 0)
    workbench.view(SESSIONS).hover()
    workbench.page.locator('.part.sidebar .action-label[aria-label="Show Archived Sessions"]').click()
    workbench.row(SESSIONS, r"^After turn 1 · .*archived")
    workbench.screenshot("archived-shown")
    # The key acts on the selected row even when a refresh redraws the rows under it.
    _select(workbench, r"^After turn 1 · .*archived")
    workbench.page.keyboard.press("Shift+Delete")
    badge = workbench.view(SESSIONS).locator(".monaco-list-row", has_text=re.compile(r"· archived"))
    badge.first.wait_for(state="detached", timeout=UI_TIMEOUT_MS)
    workbench.wait_rows(SESSIONS, orphan, 1)
    assert scenario.node(scenario.orphan)["archived"] is False
    assert scenario.node(scenario.main.id)["title"] == "Move the uploader to the queue"


def _select(workbench: Workbench, pattern: str) -> None:
    """Click the Session Branches row matching `pattern`; then wait until it is selected, the tree focused."""
    workbench.row(SESSIONS, pattern).click()
    tree = workbench.view(SESSIONS).locator(".monaco-list:focus-within")
    selected = tree.locator(".monaco-list-row.selected", has_text=re.compile(pattern))
    selected.first.wait_for(timeout=UI_TIMEOUT_MS)


def test_rename_archive_and_restore_from_the_palette(workbench: Workbench, scenario: Scenario) -> None:
    workbench.open_container("Remem")
    workbench.row(SESSIONS, r"orphan")
    workbench.run_command("Remem: Rename Session…")
    workbench.quick_pick(re.escape(scenario.orphan))
    title = workbench.page.locator(".quick-input-widget .quick-input-title", has_text="Remem: Rename Session")
    title.wait_for(timeout=UI_TIMEOUT_MS)  # the title's input, after the session's pick
    box = workbench.page.locator(".quick-input-widget input")
    box.fill("Retry the upload")
    box.press("Enter")
    renamed = r"^After turn 1 · Retry the upload"
    workbench.wait_rows(SESSIONS, renamed, 1)
    workbench.run_command("Remem: Archive Session")
    workbench.quick_pick("Retry the upload")
    workbench.wait_view_description(SESSIONS, "1 archived hidden")
    workbench.wait_rows(SESSIONS, renamed, 0)
    workbench.run_command("Remem: Restore Session")
    # Only what it would change is offered: the archived session.
    offered = workbench.quick_pick_rows("Remem: Restore Session")
    assert len(offered) == 1 and "Retry the upload" in offered[0], offered
    workbench.quick_pick("Retry the upload")
    workbench.wait_rows(SESSIONS, renamed, 1)


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


CLAUDE_SESSION = "7c1a0000-0000-4000-8000-0000000000cc"
CODEX_SESSION = "019c0000-0000-7000-8000-0000000000cd"


@pytest.fixture
def harness_sessions(scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Claude Code session with a rewind and a Codex session of the workspace, in the harnesses'
    default folders; asked for before `workbench`, so the editor's daemon finds them."""
    cwd, cc = str(scenario.project), claude_lines
    records = [
        cc.prompt("u1", None, "Explain the retry loop"),
        cc.say("a1", "u1", "It backs off twice."),
        cc.prompt("u2", "a1", "Make it three times"),
        cc.say("a2", "u2", "Done."),
        cc.prompt("u3", "a1", "Rather log each retry"),  # a rewind to the first answer
        cc.say("a3", "u3", "Logged."),
    ]
    project = tmp_path / "claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", cwd)
    project.mkdir(parents=True)
    transcript = project / f"{CLAUDE_SESSION}.jsonl"
    transcript.write_bytes(cc.jsonl(*({**r, "sessionId": CLAUDE_SESSION, "cwd": cwd} for r in records)))
    day = tmp_path / "codex" / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True)
    rollout = day / f"rollout-2026-11-30T09-00-00-{CODEX_SESSION}.jsonl"
    turn = codex_lines.turn("t1", "Add a changelog entry", "Added.")
    rollout.write_bytes(codex_lines.rollout(codex_lines.meta(CODEX_SESSION, cwd=cwd), *turn))
    for path in (transcript, rollout):
        os.utime(path, (1_600_000_000, 1_600_000_000))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))


def test_claude_code_and_codex_sessions_show_in_the_tree_by_harness(
    harness_sessions: None, workbench: Workbench, scenario: Scenario, tmp_path: Path
) -> None:
    workbench.open_container("Remem")
    workbench.row(SESSIONS, r"Explain the retry loop")
    workbench.row(SESSIONS, r"Add a changelog entry")
    workbench.screenshot("harness-tree")
    rows = workbench.rows(SESSIONS)
    texts = [text for _, text in rows]
    claude_at = next(i for i, t in enumerate(texts) if t.startswith("Explain the retry loop"))
    codex_at = next(i for i, t in enumerate(texts) if t.startswith("Add a changelog entry"))
    branch_at = next(i for i, t in enumerate(texts) if "abandoned after turn 1" in t)
    assert "Claude Code" in texts[claude_at] and "Codex" in texts[codex_at], texts
    assert rows[branch_at][0] == rows[claude_at][0] + 1 and branch_at > claude_at
    assert texts[branch_at].startswith("Make it three times"), texts
    main = re.escape(label(scenario.node(scenario.main.id)))
    assert workbench.count_rows(SESSIONS, main) == 1  # beside the DSH sessions

    # Branched from its row: the row's own button, the same modal question, and the whole command
    # that resumes the branch in Claude Code (its folder, and its config folder: not ~/.claude)
    # to copy.
    claude = workbench.row(SESSIONS, r"^Explain the retry loop")
    claude.hover()
    claude.locator('.action-label[aria-label="Branch from Turn…"]').click()
    workbench.quick_pick(r"^Turn 1(?!\d)")
    question = workbench.page.locator(".monaco-dialog-box", has_text="copies the conversation only")
    question.wait_for(timeout=UI_TIMEOUT_MS)
    assert "Branch the session after turn 1?" in question.inner_text()
    question.locator(".monaco-button", has_text=re.compile(r"^Branch$")).first.click()
    said = r"Branched “Explain the retry loop” after turn 1: .*Resume it with `cd .* claude --resume "
    done = workbench.notification(said)
    workbench.screenshot("branch-resume-command")
    [child] = [n for n in scenario.tree() if n["parent"] == CLAUDE_SESSION and n["kind"] == "fork"]
    config = shlex.quote(str(tmp_path / "claude"))
    command = (
        f"cd {shlex.quote(str(scenario.project))} && CLAUDE_CONFIG_DIR={config} claude --resume {child['id']}"
    )
    assert command in done.inner_text()
    workbench.page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    workbench.notification_button(said, "Copy Resume Command")
    copied = "command => navigator.clipboard.readText().then(text => text === command)"
    workbench.page.wait_for_function(copied, arg=command, timeout=UI_TIMEOUT_MS)
    # Its row says where it branched, as a DSH branch's does.
    assert "Claude Code" in workbench.row(SESSIONS, r"^After turn 1 · new branch \(1\)").inner_text()


@dataclass(frozen=True)
class Demo:
    project: Path
    sessions: DemoSessions


@pytest.fixture
def demo(scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Demo]:
    """The demo as `scripts/demo` seeds it, its scripted model running; asked for before
    `workbench`, so that the editor's daemon has the demo model's key."""
    key = "demo-key-of-this-test"
    monkeypatch.setenv(demo_model.KEY_ENV, key)
    command = [sys.executable, "-m", "scripts.demo_model"]
    model = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert model.stdout is not None
        url = model.stdout.readline().strip()
        project = tmp_path / "demo-project"
        project.mkdir()
        yield Demo(project, seed(scenario.home.root, tmp_path / "demo-dsh", project, None, url))
    finally:
        model.terminate()
        model.wait(timeout=30)


def test_the_demo_consolidates_in_the_editor_without_a_key(demo: Demo, workbench: Workbench) -> None:
    workbench.open_folder(demo.project)
    workbench.open_container("Remem")
    workbench.row(SESSIONS, r"orphan")
    workbench.run_command("Remem: Consolidate Session")
    workbench.quick_pick(re.escape(demo.sessions.main))
    # The scripted model finds the project fact and the preference the demo's conversation states.
    said = r"Consolidated “.*”: 2 changes to memory — added gateway-30-second-limit \(project\), added"
    workbench.notification(said)
    workbench.row(MEMORY, r"gateway-30-second-limit")
    workbench.row(MEMORY, r"standard-library-first")
    workbench.row(SESSIONS, r"✓ consolidated")
    workbench.screenshot("demo-consolidated")
