"""A hand save landing between a commit's comparison and its publish is kept, never replaced.

The save is made at that exact instant (just before the publish step), once with the kernel's
atomic exchange and once with the compare-then-rename fallback used where it is missing; and a
save built on the new file a reader saw in the instant before the exchange was undone does not
take the save put back with it, nor is an in-place save that opened the file just before the
exchange written into the file the commit discards.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from remem.daemon import swap
from remem.daemon.fsutil import is_temp_name
from remem.daemon.memory import journal
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.lint import lint_paths
from remem.daemon.memory.revision import global_revision
from remem.daemon.memory.store import MemoryStore
from remem.daemon.safe_open import HeldFolder
from tests.reliability.editor import STYLES, kept_text, save

from .factory import delete, put
from .test_store import EMPTY

Exchange = Callable[[HeldFolder, str, str], bool]


@pytest.fixture(params=["exchange", "fallback"])
def publish_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "fallback":
        monkeypatch.setattr(swap, "_renameat2", None)
    elif swap._renameat2 is None:
        pytest.skip("this system has no renameat2")
    return request.param


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if is_temp_name(p.name) or p.name == journal.JOURNAL_NAME]


def test_global_save_in_the_window_wins(
    store: MemoryStore, publish_mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = store.replace_global(EMPTY, "Old global.\n").revision
    swap_in = swap.swap_in

    def save_then_publish(folder: HeldFolder, temp: str, target: str, expected: str, **options: Any) -> None:
        (folder.path / target).write_text("Old global.\nSaved by hand.\n")
        swap_in(folder, temp, target, expected, **options)

    monkeypatch.setattr(swap, "swap_in", save_then_publish)
    result = store.replace_global(base, "New global.\n")
    assert result.status == "conflict"
    assert store.home.global_file.read_text() == "Old global.\nSaved by hand.\n"
    assert result.revision == global_revision(b"Old global.\nSaved by hand.\n")
    assert leftovers(store.home.memory) == []


@pytest.mark.parametrize("saved_file", ["alpha.md", "beta.md"])
def test_record_save_in_the_window_undoes_the_whole_batch(
    store: MemoryStore,
    workspace: WorkspaceId,
    publish_mode: str,
    saved_file: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = store.commit_workspace(workspace, EMPTY, [put("alpha"), put("beta")]).revision
    folder = store.folder(workspace)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    saved = before[saved_file].replace(b"Why it matters.", b"Saved by hand.")
    apply = journal._apply

    def save_then_apply(folder: HeldFolder, step: journal.Step) -> None:
        if step.final == saved_file:
            (folder.path / saved_file).write_bytes(saved)
        apply(folder, step)

    monkeypatch.setattr(journal, "_apply", save_then_apply)
    result = store.commit_workspace(
        workspace, base, [delete("alpha"), put("beta", body="New.\n"), put("gamma")]
    )
    assert result.status == "conflict"
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == {**before, saved_file: saved}
    assert result.revision == store.read_workspace(workspace).revision != base
    assert leftovers(folder) == []


def test_a_file_saved_where_a_new_record_goes_is_kept(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = store.commit_workspace(workspace, EMPTY, [put("alpha")]).revision
    apply = journal._apply

    def create_then_apply(folder: HeldFolder, step: journal.Step) -> None:
        if step.final == "gamma.md":
            (folder.path / "gamma.md").write_text("Started by hand.\n")
        apply(folder, step)

    monkeypatch.setattr(journal, "_apply", create_then_apply)
    assert store.commit_workspace(workspace, base, [put("gamma")]).status == "conflict"
    assert (store.folder(workspace) / "gamma.md").read_text() == "Started by hand.\n"


def test_a_commit_a_save_displaces_puts_the_earlier_intent_back(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The intent names who made the state the folder keeps: the first commit's agent, not the
    commit that published nothing (history.intending)."""
    base = store.commit_workspace(workspace, EMPTY, [put("alpha")]).revision
    before = _intents(store)
    assert before, "the first commit leaves its intent"
    target = store.folder(workspace) / "alpha.md"
    saved = target.read_bytes().replace(b"Why it matters.", b"Saved by hand.")
    apply = journal._apply

    def save_then_apply(folder: HeldFolder, step: journal.Step) -> None:
        if step.final == "alpha.md":
            target.write_bytes(saved)
        apply(folder, step)

    monkeypatch.setattr(journal, "_apply", save_then_apply)
    assert store.commit_workspace(workspace, base, [put("alpha", body="Changed.\n")]).status == "conflict"
    assert _intents(store) == before


def _intents(store: MemoryStore) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in store.home.state.glob("history-intent-*")}


class LateEditor:
    """A save that lands in the instant before the exchange, and an editor that reads our file in
    the instant before the undo, then saves its edit of that read right after the undo."""

    def __init__(self, target: Path, saved: bytes, style: str) -> None:
        self.target, self.saved, self.style = target, saved, style
        self.edit = b"Edited after the undo.\n"
        self.thread: threading.Thread | None = None

    def exchange(self, real: Exchange) -> Exchange:
        def save_read_exchange(folder: HeldFolder, a: str, b: str) -> bool:
            if self.thread is not None or folder.path / b != self.target:
                return real(folder, a, b)
            self.target.write_bytes(self.saved)
            exchanged = real(folder, a, b)
            seen = self.target.read_bytes()  # our new file, about to be taken back
            self.thread = threading.Thread(target=self._save_after_undo, args=(seen,))
            self.thread.start()
            return exchanged

        return save_read_exchange

    def _save_after_undo(self, seen: bytes) -> None:
        deadline = time.monotonic() + 10
        while self.target.read_bytes() != self.saved and time.monotonic() < deadline:
            time.sleep(0.0005)
        save(self.target, seen + self.edit, self.style)

    def kept(self) -> str:
        assert self.thread is not None, "the exchange never ran"
        self.thread.join()
        return kept_text(self.target, self.target.read_text())


@pytest.fixture(params=STYLES)
def late_style(request: pytest.FixtureRequest) -> str:
    if swap._renameat2 is None:
        pytest.skip("this system has no renameat2: there is no undo to race")
    return request.param


def test_global_save_put_back_outlives_a_save_built_on_our_file(
    store: MemoryStore, late_style: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = store.replace_global(EMPTY, "Old global.\n").revision
    editor = LateEditor(store.home.global_file, b"Old global.\nSaved by hand.\n", late_style)
    monkeypatch.setattr(swap, "_exchange", editor.exchange(swap._exchange))
    assert store.replace_global(base, "New global.\n").status == "conflict"
    kept = editor.kept()
    assert "Saved by hand.\n" in kept and "Edited after the undo.\n" in kept
    assert store.home.global_file.read_text() == "New global.\nEdited after the undo.\n"
    _told_of_the_kept_save(store.home.global_file)


def test_record_save_put_back_outlives_a_save_built_on_our_file(
    store: MemoryStore, workspace: WorkspaceId, late_style: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = store.commit_workspace(workspace, EMPTY, [put("alpha"), put("beta")]).revision
    target = store.folder(workspace) / "beta.md"
    saved = target.read_bytes().replace(b"Why it matters.", b"Saved by hand.")
    editor = LateEditor(target, saved, late_style)
    monkeypatch.setattr(swap, "_exchange", editor.exchange(swap._exchange))
    changes = [put("alpha", body="New alpha.\n"), put("beta", body="New beta.\n")]
    assert store.commit_workspace(workspace, base, changes).status == "conflict"
    kept = editor.kept()
    assert "Saved by hand.\n" in kept and "Edited after the undo.\n" in kept
    assert "New alpha." not in (target.parent / "alpha.md").read_text()
    _told_of_the_kept_save(target)


def _told_of_the_kept_save(target: Path) -> None:
    """The copy is named to the person by the validator (CLI and editor), not left to be found."""
    [copy] = target.parent.glob(f"{target.name}.unmerged-*")
    [report] = lint_paths([target])
    [warning] = [d for d in report.diagnostics if d.code == "remem/unmerged-save"]
    assert copy.name in warning.message


class OpenedEarly:
    """An in-place save that opened the file just before the exchange and writes just after it,
    as one does whose truncation waited for the exchange to release the file."""

    def __init__(self, target: Path, saved: bytes) -> None:
        self.target, self.saved = target, saved
        self.fd: int | None = None

    def exchange(self, real: Exchange) -> Exchange:
        def open_then_exchange(folder: HeldFolder, a: str, b: str) -> bool:
            if self.fd is None and folder.path / b == self.target:
                self.fd = os.open(self.target, os.O_WRONLY)
            return real(folder, a, b)

        return open_then_exchange

    def write(self) -> None:
        assert self.fd is not None, "the exchange never ran"
        os.ftruncate(self.fd, 0)
        os.write(self.fd, self.saved)
        os.close(self.fd)


@pytest.fixture
def leases() -> None:
    if not sys.platform.startswith("linux") or swap._renameat2 is None:
        pytest.skip("the probe for a save under way needs Linux's leases and renameat2")


def test_global_save_opened_before_the_exchange_is_not_discarded(
    store: MemoryStore, leases: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = store.replace_global(EMPTY, "Old global.\n").revision
    editor = OpenedEarly(store.home.global_file, b"Old global.\nSaved by hand.\n")
    monkeypatch.setattr(swap, "_exchange", editor.exchange(swap._exchange))
    assert store.replace_global(base, "New global.\n").status == "conflict"
    editor.write()
    assert store.home.global_file.read_bytes() == editor.saved
    assert leftovers(store.home.memory) == []


def test_record_save_opened_before_its_removal_is_not_discarded(
    store: MemoryStore, workspace: WorkspaceId, leases: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = store.commit_workspace(workspace, EMPTY, [put("alpha"), put("beta")]).revision
    target = store.folder(workspace) / "beta.md"
    editor = OpenedEarly(target, target.read_bytes().replace(b"Why it matters.", b"Saved by hand."))
    rename = os.rename

    def open_then_rename(a: str | Path, b: str | Path, **at: Any) -> None:
        if editor.fd is None and Path(a).name == target.name:
            editor.fd = os.open(target, os.O_WRONLY)
        rename(a, b, **at)

    monkeypatch.setattr(swap.os, "rename", open_then_rename)
    assert store.commit_workspace(workspace, base, [delete("beta")]).status == "conflict"
    editor.write()
    assert target.read_bytes() == editor.saved
