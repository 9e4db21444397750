"""MemoryStore behaviour: reads, CAS commits, canonical batches, hand edits, permissions."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory import journal
from remem.daemon.memory.batch import InvalidChanges
from remem.daemon.memory.context import render_context
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.index import render_index
from remem.daemon.memory.record import RECORDS_MAX
from remem.daemon.memory.store import MemoryInvalid, MemoryStore

from .factory import delete, put

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def snapshot_files(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_fresh_scopes_are_empty_with_stable_revisions(store: MemoryStore, workspace: WorkspaceId) -> None:
    assert store.read_global().model_dump() == {"revision": EMPTY, "content": ""}
    snap = store.read_workspace(workspace)
    assert snap.records == [] and snap.revision == EMPTY
    assert not store.folder(workspace).exists(), "reading must not create the workspace"


def test_commit_writes_records_index_and_workspace_info(store: MemoryStore, workspace: WorkspaceId) -> None:
    result = store.commit_workspace(workspace, EMPTY, [put("b-rule", type_="feedback"), put("a-fact")])
    assert result.status == "committed"
    folder = store.folder(workspace)
    assert sorted(p.name for p in folder.iterdir()) == [
        "MEMORY.md",
        "a-fact.md",
        "b-rule.md",
        "workspace.json",
    ]
    snap = store.read_workspace(workspace)
    assert snap.revision == result.revision
    assert [r.name for r in snap.records] == ["a-fact", "b-rule"]
    assert (folder / "MEMORY.md").read_text() == render_index(snap.records)
    assert '"cwd": "' + workspace.cwd in (folder / "workspace.json").read_text()
    assert (folder / "a-fact.md").read_text() == (
        "---\nname: a-fact\ndescription: About a-fact\ntype: project\n---\nWhy it matters.\n"
    )


def test_everything_written_is_user_only(store: MemoryStore, workspace: WorkspaceId) -> None:
    store.commit_workspace(workspace, EMPTY, [put("a-fact")])
    store.replace_global(EMPTY, "Be terse.\n")
    for path in [store.home.root, *store.home.root.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} is {oct(mode)}"


def test_a_commit_syncs_each_file_once_and_the_folder_around_its_steps(
    home: Home, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal is the commit point and replays any step a power cut undid, so the steps
    themselves are not synced; the folder is, before the journal that would replay them goes."""
    store = MemoryStore(home, history=False)
    first = store.commit_workspace(workspace, EMPTY, [put("a-fact"), put("b-rule"), put("c-gone")])
    events: list[str] = []
    fsync, unlink, apply = os.fsync, os.unlink, journal._apply

    def synced(fd: int) -> None:
        events.append("sync-folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "sync-file")
        fsync(fd)

    def unlinked(path: str | os.PathLike[str], **kwargs: object) -> None:
        if Path(path).name == journal.JOURNAL_NAME:
            events.append("drop-journal")
        unlink(path, **kwargs)  # type: ignore[arg-type]

    def applied(folder: Path, step: journal.Step) -> None:
        events.append("step")
        apply(folder, step)

    monkeypatch.setattr(os, "fsync", synced)
    monkeypatch.setattr(os, "unlink", unlinked)
    monkeypatch.setattr(journal, "_apply", applied)
    changes = [
        put("a-fact", body="Changed.\n"),
        put("b-rule", body="Changed.\n"),
        put("d-new"),
        delete("c-gone"),
    ]
    assert store.commit_workspace(workspace, first.revision, changes).status == "committed"
    # three records and MEMORY.md, then the journal; five steps (the delete and MEMORY.md among them)
    assert events == [
        *["sync-file"] * 5,
        "sync-folder",
        *["step"] * 5,
        "sync-folder",
        "drop-journal",
        "sync-folder",
    ]
    assert {r.name for r in store.read_workspace(workspace).records} == {"a-fact", "b-rule", "d-new"}


def test_stale_revision_is_a_conflict_and_writes_nothing(store: MemoryStore, workspace: WorkspaceId) -> None:
    first = store.commit_workspace(workspace, EMPTY, [put("a-fact")])
    before = snapshot_files(store.folder(workspace))
    result = store.commit_workspace(workspace, EMPTY, [put("other")])
    assert result.status == "conflict" and result.revision == first.revision
    assert snapshot_files(store.folder(workspace)) == before


def test_no_change_batch_writes_nothing(store: MemoryStore, workspace: WorkspaceId) -> None:
    first = store.commit_workspace(workspace, EMPTY, [put("a-fact")])
    (store.folder(workspace) / "MEMORY.md").unlink()
    before = snapshot_files(store.folder(workspace))
    result = store.commit_workspace(workspace, first.revision, [put("a-fact", body="Why it matters.\n\n\n")])
    assert result.status == "no-change" and result.revision == first.revision
    assert snapshot_files(store.folder(workspace)) == before


def test_preview_and_commit_agree_and_order_is_canonical(store: MemoryStore, workspace: WorkspaceId) -> None:
    base = store.commit_workspace(workspace, EMPTY, [put("old-b"), put("old-a")]).revision
    changes = [put("new-z"), delete("old-b"), put("new-c"), delete("old-a")]
    plan = store.preview_workspace(workspace, changes)
    assert [getattr(c, "name", None) or c.record.name for c in plan.changes] == [
        "old-a",
        "old-b",
        "new-c",
        "new-z",
    ]
    assert plan.before == base
    assert store.commit_workspace(workspace, base, changes).revision == plan.after
    assert [r.name for r in store.read_workspace(workspace).records] == ["new-c", "new-z"]


def test_delete_and_update(store: MemoryStore, workspace: WorkspaceId) -> None:
    rev = store.commit_workspace(workspace, EMPTY, [put("a"), put("b")]).revision
    rev = store.commit_workspace(workspace, rev, [delete("a"), put("b", body="Updated.\n")]).revision
    snap = store.read_workspace(workspace)
    assert [(r.name, r.content) for r in snap.records] == [("b", "Updated.\n")]
    assert not (store.folder(workspace) / "a.md").exists()
    assert "[a]" not in (store.folder(workspace) / "MEMORY.md").read_text()


def test_invalid_batches_list_every_problem(store: MemoryStore, workspace: WorkspaceId) -> None:
    bad = [delete("ghost"), put("Bad_Name"), put("ok", type_="nope"), put("ok2"), put("OK2")]
    with pytest.raises(InvalidChanges) as caught:
        store.commit_workspace(workspace, EMPTY, bad)
    found = {(p.change, p.code) for p in caught.value.problems}
    assert found >= {
        (0, "remem/delete-missing"),
        (1, "remem/name-invalid"),
        (2, "remem/type-invalid"),
        (4, "remem/batch-duplicate-name"),
    }
    assert not store.folder(workspace).exists()


def test_a_rule_the_batch_breaks_is_told_on_its_changes_not_on_existing_files(
    store: MemoryStore, workspace: WorkspaceId
) -> None:
    rev = store.commit_workspace(workspace, EMPTY, [put(f"r{n:03d}") for n in range(RECORDS_MAX)]).revision
    for batch in ([put("R000")], [put("one-too-many")]):  # a duplicate name; the record limit
        with pytest.raises(InvalidChanges) as caught:
            store.commit_workspace(workspace, rev, batch)
        assert caught.value.problems and all(
            (p.change, p.file) == (0, None) for p in caught.value.problems
        ), caught.value.problems
    # What an existing file got wrong before the batch is still its own.
    broken = store.folder(workspace) / "r007.md"
    broken.write_text(broken.read_text().replace("type: project", "type: nope"))
    with pytest.raises(MemoryInvalid) as invalid:
        store.read_workspace(workspace)
    assert invalid.value.revision is not None
    with pytest.raises(InvalidChanges) as caught:
        store.commit_workspace(workspace, invalid.value.revision, [delete("r001")])
    assert [(p.file, p.code) for p in caught.value.problems] == [("r007.md", "remem/type-invalid")]


def test_bad_expected_revision_is_invalid_input(store: MemoryStore, workspace: WorkspaceId) -> None:
    with pytest.raises(InvalidChanges, match="not a revision"):
        store.commit_workspace(workspace, "abc", [put("a")])


def test_hand_edits_are_read_as_they_are(store: MemoryStore, workspace: WorkspaceId) -> None:
    rev = store.commit_workspace(workspace, EMPTY, [put("a-fact")]).revision
    path = store.folder(workspace) / "a-fact.md"
    lf = path.read_bytes()
    path.write_bytes(lf.replace(b"\n", b"\r\n"))
    assert store.read_workspace(workspace).revision == rev, "line endings alone keep the revision"
    path.write_bytes(lf.replace(b"Why it matters.", b"Edited by hand."))
    snap = store.read_workspace(workspace)
    assert snap.revision != rev and snap.records[0].content == "Edited by hand.\n"
    assert store.commit_workspace(workspace, rev, [put("b")]).status == "conflict"


def test_invalid_hand_edit_is_reported_never_dropped(store: MemoryStore, workspace: WorkspaceId) -> None:
    rev = store.commit_workspace(workspace, EMPTY, [put("a-fact"), put("b-fact")]).revision
    path = store.folder(workspace) / "a-fact.md"
    broken = path.read_text().replace("type: project", "type: nonsense")
    path.write_text(broken)
    with pytest.raises(MemoryInvalid) as caught:
        store.read_workspace(workspace)
    assert [Path(f.path).name for f in caught.value.files] == ["a-fact.md"]
    assert caught.value.files[0].diagnostics[0].code == "remem/type-invalid"
    with pytest.raises(MemoryInvalid):
        render_context(store, workspace)
    with pytest.raises(InvalidChanges) as refused:
        store.commit_workspace(workspace, caught.value.revision, [put("c-fact")])
    assert refused.value.problems[0].file == "a-fact.md"
    assert path.read_text() == broken, "the broken file is left exactly as the user wrote it"
    fixed = store.commit_workspace(workspace, caught.value.revision, [put("a-fact", body="Fixed.\n")])
    assert fixed.status == "committed" and fixed.revision not in (rev, caught.value.revision)
    assert [r.name for r in store.read_workspace(workspace).records] == ["a-fact", "b-fact"]


def test_symlinked_record_is_refused(store: MemoryStore, workspace: WorkspaceId, tmp_path: Path) -> None:
    store.commit_workspace(workspace, EMPTY, [put("a-fact")])
    outside = tmp_path / "secret.md"
    outside.write_text("---\nname: secret\ndescription: d\ntype: project\n---\nsecret\n")
    (store.folder(workspace) / "secret.md").symlink_to(outside)
    with pytest.raises(MemoryInvalid) as caught:
        store.read_workspace(workspace)
    assert caught.value.files[0].diagnostics[0].code == "remem/not-a-regular-file"


def test_global_replace_conflict_no_change_and_limit(store: MemoryStore) -> None:
    committed = store.replace_global(EMPTY, "Be terse.\r\n\r\n")
    assert committed.status == "committed"
    assert store.home.global_file.read_bytes() == b"Be terse.\n"
    assert store.replace_global(EMPTY, "x\n").status == "conflict"
    assert store.replace_global(committed.revision, "\ufeffBe terse.").status == "no-change"
    with pytest.raises(InvalidChanges) as caught:
        store.replace_global(committed.revision, "x" * 30000)
    assert caught.value.problems[0].code == "remem/global-too-large"
    with pytest.raises(InvalidChanges):
        store.replace_global(committed.revision, "nul\x00byte\n")
    assert store.read_global().content == "Be terse.\n"


def test_regenerating_the_index_of_a_workspace_never_committed_to_creates_nothing(
    store: MemoryStore, tmp_path: Path
) -> None:
    nowhere = WorkspaceId.from_cwd(str(tmp_path / "no-such-project"))
    assert store.regenerate_index(nowhere) is False
    assert not store.folder(nowhere).exists()


def test_regenerate_index_after_hand_edit(store: MemoryStore, workspace: WorkspaceId) -> None:
    store.commit_workspace(workspace, EMPTY, [put("a-fact")])
    index = store.folder(workspace) / "MEMORY.md"
    good = index.read_text()
    index.write_text("scribbles\n")
    assert store.regenerate_index(workspace) is True
    assert index.read_text() == good
    assert store.regenerate_index(workspace) is False


def test_render_context_holds_global_index_and_record_folder(
    store: MemoryStore, workspace: WorkspaceId
) -> None:
    store.replace_global(EMPTY, "Answer in English.\n")
    store.commit_workspace(workspace, EMPTY, [put("a-fact")])
    index = store.folder(workspace) / "MEMORY.md"
    index.write_text("stale\n")
    text = render_context(store, workspace)
    assert "Answer in English." in text
    assert "- [a-fact](a-fact.md) — About a-fact" in text, "index comes from the records, not the stale file"
    assert f"{store.folder(workspace)}/<name>.md" in text


def test_revisions_are_equal_across_processes(store: MemoryStore, workspace: WorkspaceId) -> None:
    rev = store.commit_workspace(workspace, EMPTY, [put("a-fact"), put("b", body="é😀\n")]).revision
    code = (
        "import sys; from remem.daemon.home import Home; from remem.daemon.memory.store import MemoryStore;"
        "from remem.daemon.memory.identity import WorkspaceId;"
        "print(MemoryStore(Home.resolve()).read_workspace(WorkspaceId.from_cwd(sys.argv[1])).revision)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, workspace.cwd],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "123"},
    )
    assert out.stdout.strip() == rev


def test_records_round_trip_awkward_descriptions(store: MemoryStore, workspace: WorkspaceId) -> None:
    tricky = ["yes", "null", "42", "a: b", "# not a comment", "'quoted'", " padded", "ünï 😀", "[x]"]
    changes = [put(f"r{i}") for i in range(len(tricky))]
    for change, description in zip(changes, tricky, strict=True):
        change.record.description = description
    store.commit_workspace(workspace, EMPTY, changes)
    read = {r.name: r.description for r in store.read_workspace(workspace).records}
    assert [read[f"r{i}"] for i in range(len(tricky))] == tricky


def test_symlinked_workspace_folder_is_refused(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    store.folder(workspace).symlink_to(elsewhere)
    for attempt in (
        lambda: store.read_workspace(workspace),
        lambda: store.commit_workspace(workspace, EMPTY, [put("a-fact")]),
        lambda: store.regenerate_index(workspace),
    ):
        with pytest.raises(MemoryInvalid) as caught:
            attempt()
        assert caught.value.files[0].diagnostics[0].code == "remem/linked-workspace"
    assert list(elsewhere.iterdir()) == [], "nothing was written through the link"
