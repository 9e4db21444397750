"""Kill a committing process at every named crash point and prove recovery.

After each crash the next reader must see exactly the old or exactly the new generation,
never a mix, and no temp or journal file may remain once it has recovered.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.faults import EXIT_CODE, POINTS
from remem.daemon.fsutil import UNMERGED_MARKER, is_temp_name, temp_path_for
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.index import render_index
from remem.daemon.memory.journal import JOURNAL_NAME
from remem.daemon.memory.lint import lint_workspace_folder
from remem.daemon.memory.store import MemoryStore
from remem.daemon.settings import SettingsStore

from .factory import delete, put

REPO = Path(__file__).resolve().parents[2]
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
ROLLS_FORWARD = {
    "memory.workspace.after-temp-files": False,
    "memory.workspace.after-journal": True,
    "memory.workspace.mid-rename": True,
    "memory.workspace.before-journal-removal": True,
}


def run_driver(point: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REMEM_FAULTPOINT": point}
    return subprocess.run(
        [sys.executable, "-m", "tests.memory.driver", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def generation(store: MemoryStore, workspace: WorkspaceId) -> dict[str, str]:
    return {r.name: r.content for r in store.read_workspace(workspace).records}


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if is_temp_name(p.name) or p.name == JOURNAL_NAME]


def test_every_memory_fault_point_is_covered() -> None:
    covered = (
        set(ROLLS_FORWARD)
        | set(GLOBAL_POINTS)
        | {"memory.workspace.mid-rollback", "settings.after-temp-write", "settings.after-exchange"}
        | {"settings.valid-copy.after-temp-write"}  # tests/daemon/test_valid_settings_temp.py
    )
    assert {p for p in POINTS if p.startswith(("memory.", "settings."))} == covered


@pytest.mark.slow
@pytest.mark.parametrize("point", sorted(ROLLS_FORWARD))
def test_workspace_commit_crash(point: str, store: MemoryStore, workspace: WorkspaceId) -> None:
    base = store.commit_workspace(workspace, EMPTY, [put("alpha"), put("beta")]).revision
    old = generation(store, workspace)
    batch = [delete("alpha"), put("beta", body="Beta, updated.\n"), put("gamma")]
    payload = json.dumps([c.model_dump() for c in batch])
    crashed = run_driver(point, "commit", str(store.home.root), workspace.cwd, base, payload)
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    new = {"beta": "Beta, updated.\n", "gamma": "Why it matters.\n"}
    interrupted = os.listdir(store.folder(workspace))
    assert (JOURNAL_NAME in interrupted) == ROLLS_FORWARD[point], interrupted

    other_process = run_driver("", "read", str(store.home.root), workspace.cwd)
    assert other_process.returncode == 0, other_process.stderr
    expected = new if ROLLS_FORWARD[point] else old
    assert json.loads(other_process.stdout) == expected
    assert generation(store, workspace) == expected
    folder = store.folder(workspace)
    assert leftovers(folder) == []
    assert (folder / "MEMORY.md").read_text() == render_index(store.read_workspace(workspace).records)


GLOBAL_POINTS = {
    "memory.global.after-temp-write": "Old global.\n",
    "memory.global.after-exchange": "New global.\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("point", sorted(GLOBAL_POINTS))
def test_global_replace_crash(store: MemoryStore, point: str) -> None:
    base = store.replace_global(EMPTY, "Old global.\n").revision
    crashed = run_driver(point, "replace-global", str(store.home.root), base, "New global.\n")
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    assert leftovers(store.home.memory) != [], "the crash left its temp (or the displaced) file"
    assert store.read_global().content == GLOBAL_POINTS[point]
    assert leftovers(store.home.memory) == []
    if GLOBAL_POINTS[point] == "Old global.\n":
        assert store.replace_global(base, "New global.\n").status == "committed"


@pytest.mark.slow
@pytest.mark.parametrize("saved", [None, "Saved by hand.\n"], ids=["no-save", "hand-save"])
def test_a_crash_between_globals_exchange_and_its_check_keeps_the_save_it_displaced(
    store: MemoryStore, saved: str | None
) -> None:
    """Killed right after the exchange, Global holds the new text and the temp the file it
    displaced: the compared one, removed by the next access, or a save by hand that landed just
    before the exchange, which the next access keeps beside GLOBAL.md, never deletes."""
    base = store.replace_global(EMPTY, "Old global.\n").revision
    root, text = str(store.home.root), "New global.\n"
    args = (
        ("replace-global", root, base, text)
        if saved is None
        else ("replace-global-against-save", root, base, text, saved)
    )
    crashed = run_driver("memory.global.after-exchange", *args)
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    assert store.read_global().content == text
    assert leftovers(store.home.memory) == []
    kept = [p.read_text() for p in store.home.memory.iterdir() if UNMERGED_MARKER in p.name]
    assert kept == ([] if saved is None else [saved])


@pytest.mark.slow
@pytest.mark.parametrize("written", [0, 100])
def test_globals_temp_a_kill_cut_short_is_removed_not_kept_as_a_hand_save(
    store: MemoryStore, written: int
) -> None:
    """Killed while it writes its temp (a power cut before the sync leaves it empty), a publish
    leaves a temp holding neither digest its name records, and Global still the compared bytes:
    the exchange never happened, so the next access deletes the temp; no "hand save" is kept."""
    old = "Old global.\n" * 50
    base = store.replace_global(EMPTY, old).revision
    root = str(store.home.root)
    killed = run_driver("", "replace-global-cut-short", root, base, "New global.\n" * 50, str(written))
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert leftovers(store.home.memory) != [], "the kill left its partial temp"
    assert store.read_global().content == old
    assert leftovers(store.home.memory) == []
    assert [p.name for p in store.home.memory.iterdir() if UNMERGED_MARKER in p.name] == []


def test_a_link_an_exchange_left_at_globals_temp_is_kept_beside_it(store: MemoryStore) -> None:
    """A link put in place of GLOBAL.md just before an exchange that a crash cut short lies at
    the temp's name: the next access keeps it as `GLOBAL.md.unmerged-*` (a link still, its file
    untouched) rather than leave a hidden temp that sends every later read to the exclusive lock."""
    store.replace_global(EMPTY, "Old global.\n")
    elsewhere = store.home.root.parent / "dotfiles-GLOBAL.md"
    elsewhere.write_text("From dotfiles.\n")
    temp = temp_path_for(store.home.global_file, swap=("a" * 64, "b" * 64))
    temp.symlink_to(elsewhere)
    assert store.read_global().content == "Old global.\n"
    assert leftovers(store.home.memory) == []
    kept = [p for p in store.home.memory.iterdir() if UNMERGED_MARKER in p.name]
    assert [(p.name.startswith("GLOBAL.md."), p.readlink()) for p in kept] == [(True, elsewhere)]
    assert elsewhere.read_text() == "From dotfiles.\n"


@pytest.mark.slow
def test_crash_while_undoing_for_a_hand_save(store: MemoryStore, workspace: WorkspaceId) -> None:
    """A commit that meets a hand save undoes its steps; killed mid-undo, recovery finishes the
    generation around the saved file, which stays exactly as saved."""
    base = store.commit_workspace(workspace, EMPTY, [put("alpha"), put("beta")]).revision
    saved = (store.folder(workspace) / "alpha.md").read_text().replace("Why it matters.", "Saved by hand.")
    batch = [delete("alpha"), put("beta", body="Beta, updated.\n"), put("gamma")]
    payload = json.dumps([c.model_dump() for c in batch])
    crashed = run_driver(
        "memory.workspace.mid-rollback",
        "commit-against-save",
        *(str(store.home.root), workspace.cwd, base, payload, "alpha.md", saved),
    )
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    assert JOURNAL_NAME in os.listdir(store.folder(workspace))

    assert generation(store, workspace) == {
        "alpha": "Saved by hand.\n",
        "beta": "Beta, updated.\n",
        "gamma": "Why it matters.\n",
    }
    folder = store.folder(workspace)
    assert (folder / "alpha.md").read_text() == saved
    assert leftovers(folder) == []
    assert (folder / "MEMORY.md").read_text() == render_index(store.read_workspace(workspace).records)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("point", "published"), [("settings.after-temp-write", False), ("settings.after-exchange", True)]
)
def test_settings_update_crash(point: str, published: bool, home: Home) -> None:
    settings = SettingsStore(home)
    _, base = settings.read()
    crashed = run_driver(
        point, "update-settings", str(home.root), base, "consolidation.model", "crashed-model"
    )
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    current, revision = settings.read()
    assert current.consolidation.model == ("crashed-model" if published else "deepseek-v4-flash")
    assert (revision == base) is not published
    settings.update(revision, {"consolidation.model": "next-model"})
    assert leftovers(home.root) == []
    assert settings.read()[0].consolidation.model == "next-model"


@pytest.mark.slow
def test_a_crash_between_the_settings_exchange_and_its_check_keeps_the_save_it_displaced(home: Home) -> None:
    settings = SettingsStore(home)
    settings.update(settings.read()[1], {"consolidation.model": "old-model"})
    base = settings.read()[1]
    saved = "consolidation:\n  model: saved-by-hand\n"
    crashed = run_driver(
        "settings.after-exchange", "update-settings-against-save", str(home.root), base,
        "consolidation.model", "crashed-model", saved,
    )  # fmt: skip
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    current, revision = settings.read()
    assert current.consolidation.model == "crashed-model"
    settings.update(revision, {"consolidation.model": "next-model"})  # the next writer settles
    assert leftovers(home.root) == []
    assert [p.read_text() for p in home.root.iterdir() if UNMERGED_MARKER in p.name] == [saved]


@pytest.mark.slow
def test_a_link_displaced_by_the_settings_exchange_is_kept_not_hidden(home: Home) -> None:
    """`settings.yml` made a link (GNU stow) just before the exchange, which a crash cut off
    before its check: the link, at the temp's name, is kept beside the file like a displaced
    save, never followed nor left hidden."""
    settings = SettingsStore(home)
    settings.update(settings.read()[1], {"consolidation.model": "old-model"})
    base = settings.read()[1]
    dotfile = home.root.parent / "dotfiles-settings.yml"
    dotfile.write_text("consolidation:\n  model: from-dotfiles\n")
    crashed = run_driver(
        "settings.after-exchange", "update-settings-against-link", str(home.root), base,
        "consolidation.model", "crashed-model", str(dotfile),
    )  # fmt: skip
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    current, revision = settings.read()
    assert current.consolidation.model == "crashed-model"
    settings.update(revision, {"consolidation.model": "next-model"})  # the next writer settles
    assert leftovers(home.root) == []
    kept = [p for p in home.root.iterdir() if UNMERGED_MARKER in p.name]
    assert [(p.name.startswith("settings.yml"), p.readlink()) for p in kept] == [(True, dotfile)]
    assert dotfile.read_text() == "consolidation:\n  model: from-dotfiles\n"


@pytest.mark.slow
@pytest.mark.parametrize("by_hand", ["saved", "deleted", "created"])
def test_a_hand_change_after_a_crash_keeps_the_commits_version_beside_it(
    by_hand: str, store: MemoryStore, workspace: WorkspaceId
) -> None:
    """Recovery keeps a file changed by hand between the crash and the next access as the user
    left it; the version the journal committed was deleted with the temps, though no answer ever
    said the commit failed. It is kept beside the file, for a person to merge."""
    base = store.commit_workspace(workspace, EMPTY, [put("alpha"), put("beta")]).revision
    batch = [delete("alpha"), put("beta", body="Beta, updated.\n"), put("gamma", body="Gamma.\n")]
    payload = json.dumps([c.model_dump() for c in batch])
    crashed = run_driver(
        "memory.workspace.after-journal", "commit", str(store.home.root), workspace.cwd, base, payload
    )
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    folder = store.folder(workspace)
    name = "gamma.md" if by_hand == "created" else "beta.md"
    hand = (
        (folder / "alpha.md")
        .read_text()
        .replace("alpha", name.removesuffix(".md"))
        .replace("Why", "Mine: why")
    )
    if by_hand == "deleted":
        (folder / name).unlink()
    else:
        (folder / name).write_text(hand)

    records = generation(store, workspace)
    assert "alpha" not in records, "the rest of the generation is rolled forward"
    [kept] = [p for p in folder.iterdir() if p.name.startswith(f"{name}.unmerged-")]
    committed = kept.read_text()
    assert ("Beta, updated." if name == "beta.md" else "Gamma.") in committed
    assert (folder / name).read_text() == hand if by_hand != "deleted" else not (folder / name).exists()
    assert leftovers(folder) == []
    said = [d.message for found in lint_workspace_folder(folder).values() for d in found]
    assert any(kept.name in message for message in said), said
