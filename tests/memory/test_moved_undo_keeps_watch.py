"""A save put back by the undo of a commit whose folder was moved is watched, as in place.

The commit's first step is taken, then the folder is moved (a link to it put at its path, so the
editor below still reaches it) and the record of the next step is saved by hand: the commit is
undone in the moved folder. An editor that read the commit's record in the instant before the
undo and saves its edit of that read right after it would drop the save put back; the watch keeps
that save beside the record as `<name>.unmerged-*` (`swap.watch_put_back`).
"""

from __future__ import annotations

import pytest

from remem.daemon import swap
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryInvalid, MemoryStore
from tests.reliability.editor import STYLES

from .commit_points import when_reached
from .factory import put
from .test_hand_save_window import LateEditor
from .test_store import EMPTY


@pytest.mark.skipif(swap._renameat2 is None, reason="this system has no renameat2: there is no undo to race")
@pytest.mark.parametrize("style", STYLES)
def test_a_save_put_back_in_a_moved_folder_outlives_a_save_built_on_our_file(
    store: MemoryStore, workspace: WorkspaceId, style: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = store.commit_workspace(workspace, EMPTY, [put("alpha"), put("beta")]).revision
    folder = store.folder(workspace)
    moved = folder.with_name(folder.name + ".moved")

    def move_behind_a_link() -> None:
        folder.rename(moved)
        folder.symlink_to(moved)

    when_reached("memory.workspace.mid-rename", move_behind_a_link, monkeypatch)
    target = folder / "beta.md"
    saved = target.read_bytes().replace(b"Why it matters.", b"Saved by hand.")
    editor = LateEditor(target, saved, style)
    monkeypatch.setattr(swap, "_exchange", editor.exchange(swap._exchange))
    changes = [put("alpha", body="New alpha.\n"), put("beta", body="New beta.\n")]
    with pytest.raises(MemoryInvalid) as refused:
        store.commit_workspace(workspace, base, changes)
    assert [d.code for f in refused.value.files for d in f.diagnostics] == ["remem/moved-workspace"]
    kept = editor.kept()
    assert "Saved by hand.\n" in kept and "Edited after the undo.\n" in kept
    assert "New alpha." not in (moved / "alpha.md").read_text(), "the step taken was undone"
