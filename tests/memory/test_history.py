"""Memory history: one entry per generation and actor, crash reconciliation, a broken repository.

The history is written after the store's own commit point and never decides memory: these
tests kill the committing process at every history fault point, corrupt and delete the
repository, and check that memory commits go on and the history ends at the state memory is in.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import subprocess
import threading
from pathlib import Path

import pygit2
import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.faults import EXIT_CODE, POINTS
from remem.daemon.home import Home, HomeUnusable
from remem.daemon.memory import history as history_module
from remem.daemon.memory.history import History
from remem.daemon.memory.history_diff import stat
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.log_cache import FOLDER, LogCache
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import Actor
from remem.daemon.protocol.rpc import HISTORY_REFUSED, HistoryLogParams, RevertParams, RpcError
from remem.daemon.server.memory_methods import MemoryMethods

from .factory import delete, put
from .test_crash_recovery import EMPTY, run_driver
from .test_histfix_merge_kill import MERGE_POINTS

HISTORY_POINTS = ["history.before-entry", "history.after-objects", "history.after-ref"]
LOG_CACHE_POINTS = ["history.log-cache.mid-append", "history.log-cache.after-temp-write"]


def kinds(store: MemoryStore, key: str | None) -> list[str]:
    return [e.actor.kind for e in store.history.log(key)]


def run(home: Home, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home.root), "--no-daemon", *args])
    return result.exit_code, result.stdout, result.stderr


def test_every_history_fault_point_is_covered() -> None:
    covered = {*HISTORY_POINTS, *LOG_CACHE_POINTS, *MERGE_POINTS}
    assert {p for p in POINTS if p.startswith("history.")} == covered


def test_each_commit_is_one_entry_with_its_revisions(store: MemoryStore, workspace: WorkspaceId) -> None:
    first = store.commit_workspace(workspace, EMPTY, [put("alpha"), put("beta")])
    second = store.commit_workspace(workspace, first.revision, [delete("alpha"), put("gamma")])
    unchanged = store.commit_workspace(workspace, second.revision, [put("gamma")])
    stale = store.commit_workspace(workspace, first.revision, [put("delta")])
    assert unchanged.status == "no-change" and stale.status == "conflict"
    assert unchanged.history is None and stale.history is None

    newest, oldest = store.history.log(workspace.key)
    assert (newest.id, oldest.id) == (second.history, first.history)
    assert (oldest.before, oldest.after, newest.before, newest.after) == (
        EMPTY,
        first.revision,
        first.revision,
        second.revision,
    )
    assert newest.parent == oldest.id and oldest.parent is None
    assert newest.actor == Actor(kind="cli") and newest.workspace == workspace.key
    stat = store.history.with_stat(newest).stat
    assert stat is not None and (stat.added, stat.changed, stat.removed) == (["gamma"], [], ["alpha"])
    # Only memory files are kept: record files, never MEMORY.md or workspace.json.
    assert sorted(store.history.files_at(newest.id)) == ["beta.md", "gamma.md"]

    text = store.replace_global(
        store.read_global().revision, "Be brief.\n", Actor(kind="agent", session="s1")
    )
    [entry] = store.history.log(None)
    assert entry.id == text.history and entry.actor.session == "s1" and entry.scope == "global"
    assert store.history.files_at(entry.id) == {"GLOBAL.md": b"Be brief.\n"}


def test_a_deferred_entry_is_written_after_the_reply_and_before_anything_reads_or_follows_it(
    home: Home, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's commits answer before their entry is written, and the next commit of the same
    process does not wait for it either: its entry is queued behind it. An entry of another
    process and every reader wait until the queued entries are written."""
    store = MemoryStore(home, defer_history=True)
    writing, release = threading.Event(), threading.Event()
    store_entry = History._store

    def held_back(history: History, repo: pygit2.Repository, composed: object) -> None:
        if threading.current_thread().name.startswith("remem-history"):
            writing.set()
            assert release.wait(30)
        store_entry(history, repo, composed)  # type: ignore[arg-type]

    monkeypatch.setattr(History, "_store", held_back)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    assert first.status == "committed" and first.history is not None, "answered, entry unwritten"
    assert writing.wait(30)
    second = store.commit_workspace(workspace, first.revision, [put("beta")])
    assert second.status == "committed" and second.history not in (None, first.history)
    waiting = {
        "other process": lambda: MemoryStore(home).replace_global(EMPTY, "Be brief.\n"),
        "reader": lambda: MemoryStore(home).history.log(workspace.key),
    }
    results: dict[str, object] = {}
    threads = [
        threading.Thread(target=lambda n=n, f=f: results.__setitem__(n, f())) for n, f in waiting.items()
    ]
    for thread in threads:
        thread.start()
    threads[-1].join(0.5)
    assert all(t.is_alive() for t in threads), "both wait for the entries being written"
    release.set()
    for thread in threads:
        thread.join(30)
    store.history.flush()
    newest, oldest = store.history.log(workspace.key)
    assert (newest.id, oldest.id) == (second.history, first.history) and newest.parent == first.history
    assert [e.actor.kind for e in (newest, oldest)] == ["cli", "cli"]
    logged = results["reader"]
    assert isinstance(logged, list) and [e.id for e in logged] == [second.history, first.history]
    assert [e.actor.kind for e in store.history.log(None)] == ["cli"]


def test_a_commit_waits_for_a_place_when_the_queue_is_full(
    home: Home, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At most QUEUED_MAX commits' entries wait for the writer: memory held and entries a crash
    can cut off stay bounded, and the one after waits until an entry is written."""
    store = MemoryStore(home, defer_history=True)
    release = threading.Event()
    store_entry = History._store

    def held_back(history: History, repo: pygit2.Repository, composed: object) -> None:
        assert release.wait(30)
        store_entry(history, repo, composed)  # type: ignore[arg-type]

    monkeypatch.setattr(History, "_store", held_back)
    revision, ids = EMPTY, []
    for n in range(history_module.QUEUED_MAX):
        result = store.commit_workspace(workspace, revision, [put(f"r{n}")])
        revision, ids = result.revision, [*ids, result.history]
    last: list[object] = []
    waiting = threading.Thread(
        target=lambda: last.append(store.commit_workspace(workspace, revision, [put("last")]))
    )
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive(), "the queue is full"
    release.set()
    waiting.join(30)
    store.history.flush()
    assert [e.id for e in store.history.log(workspace.key)][1:] == ids[::-1]


def test_a_queued_entry_that_cannot_be_written_takes_the_ones_behind_it_along(
    home: Home, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An entry queued on top of one whose write failed is not written on a missing parent: the
    next commit after the queue empties records the state it starts from, as recovered."""
    store = MemoryStore(home, defer_history=True)
    base = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    store.history.flush()
    release = threading.Event()
    store_entry = History._store
    failed = []

    def failing_once(history: History, repo: pygit2.Repository, composed: object) -> None:
        assert release.wait(30)
        if not failed:
            failed.append(composed)
            raise OSError("disk full")
        store_entry(history, repo, composed)  # type: ignore[arg-type]

    monkeypatch.setattr(History, "_store", failing_once)
    revision = base.revision
    with caplog.at_level(logging.WARNING, logger="remem.daemon"):
        for name in ("beta", "gamma"):
            result = store.commit_workspace(workspace, revision, [put(name)])
            assert result.status == "committed"
            revision = result.revision
        release.set()
        store.history.flush()
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2 and "disk full" in warnings[0] and "was not written" in warnings[1]
    assert [e.after for e in store.history.log(workspace.key)] == [base.revision]
    last = store.commit_workspace(workspace, revision, [put("delta")])
    store.history.flush()
    entries = store.history.log(workspace.key)
    assert [(e.actor.kind, e.after) for e in entries] == [
        ("cli", last.revision),
        ("recovered", revision),
        ("cli", base.revision),
    ]


def test_the_history_repository_is_bare_and_outside_memory(
    store: MemoryStore, workspace: WorkspaceId
) -> None:
    store.commit_workspace(workspace, EMPTY, [put("alpha")])
    repo = pygit2.Repository(str(store.home.root / "history"))
    assert repo.is_bare and sorted(repo.branches.local) == [f"ws-{workspace.key}"]
    assert not (store.home.memory / "history").exists()


@pytest.mark.parametrize("merging", [True, False], ids=["merged", "one-pack-each"])
def test_entries_are_packs_plain_git_reads_and_merges_keep_every_object(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch, merging: bool
) -> None:
    """Each entry is written as one pack of git's own format; merging the small packs keeps every
    object, so `git fsck` finds the repository whole and `git log` lists every entry."""
    # Whether an entry merges is read off its commit id, which holds the time: decided here, or
    # one run in ~10 000 would merge an entry of the other case.
    monkeypatch.setattr(history_module, "_is_pack_time", lambda oid: merging)
    revision, ids = EMPTY, []
    for n in range(6):
        result = store.commit_workspace(
            workspace, revision, [put("alpha", body=f"Take {n}.\n"), put(f"r{n}")]
        )
        revision = result.revision
        ids.append(result.history)
    git_dir = store.home.root / "history"
    packs = list((git_dir / "objects" / "pack").glob("*.pack"))
    assert len(packs) == (1 if merging else 6)
    assert not [p for p in (git_dir / "objects").iterdir() if len(p.name) == 2 and any(p.iterdir())]
    git = ["git", "--git-dir", str(git_dir)]
    checked = subprocess.run([*git, "fsck", "--strict", "--no-dangling"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    logged = subprocess.run(
        [*git, "log", "--format=%H", f"ws-{workspace.key}"], capture_output=True, text=True
    )
    assert logged.stdout.split() == ids[::-1]
    fresh = MemoryStore(store.home).history
    assert fresh.files_at(ids[0])["alpha.md"].endswith(b"Take 0.\n")
    assert sorted(fresh.files_at(ids[-1])) == ["alpha.md", *(f"r{n}.md" for n in range(6))]


@pytest.mark.slow
@pytest.mark.parametrize("point", HISTORY_POINTS)
def test_a_crash_in_the_history_write_is_reconciled(
    point: str, store: MemoryStore, workspace: WorkspaceId
) -> None:
    base = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    payload = json.dumps([put("beta").model_dump()])
    crashed = run_driver(point, "commit", str(store.home.root), workspace.cwd, base.revision, payload)
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    current = store.read_workspace(workspace)
    assert {r.name for r in current.records} == {"alpha", "beta"}, "the memory commit stands"

    fresh = MemoryStore(store.home)  # the next start
    asyncio.run(MemoryMethods(store.home).reconcile_history())
    entries = fresh.history.log(workspace.key)
    assert entries[0].after == current.revision and [e.after for e in entries[1:]] == [base.revision]
    # Cut off before its ref moved, the entry is replaced by the state found on start, the
    # commit's own by the intent it wrote first (decision 0442).
    assert (entries[0].actor.kind, entries[0].before) == ("cli", base.revision)
    asyncio.run(MemoryMethods(store.home).reconcile_history())
    assert len(fresh.history.log(workspace.key)) == 2, "reconciling twice adds nothing"


def test_edits_while_no_daemon_ran_are_one_entry_on_start(store: MemoryStore, workspace: WorkspaceId) -> None:
    store.commit_workspace(workspace, EMPTY, [put("alpha")])
    folder = store.folder(workspace)
    (folder / "alpha.md").write_text((folder / "alpha.md").read_text() + "More.\n")
    shutil.copy(folder / "alpha.md", folder / "beta.md")  # invalid: its name says alpha
    store.home.global_file.write_text("Written by hand.\n")
    asyncio.run(MemoryMethods(store.home).reconcile_history())
    assert kinds(store, workspace.key) == ["recovered", "cli"]
    assert kinds(store, None) == ["recovered"]
    assert sorted(store.history.files_at(store.history.log(workspace.key)[0].id)) == ["alpha.md", "beta.md"]


def test_an_untracked_state_is_recorded_before_the_commit_that_leaves_it(
    store: MemoryStore, workspace: WorkspaceId
) -> None:
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    (store.folder(workspace) / "alpha.md").write_text(
        (store.folder(workspace) / "alpha.md").read_text() + "By hand.\n"
    )
    edited = store.read_workspace(workspace).revision
    store.commit_workspace(workspace, edited, [put("beta")])
    entries = store.history.log(workspace.key)
    assert [(e.actor.kind, e.before, e.after) for e in entries[1:]] == [
        ("recovered", edited, edited),
        ("cli", EMPTY, first.revision),
    ]
    assert entries[0].before == edited


def test_a_branch_whose_newest_entry_does_not_read_is_damaged_and_never_blocks_a_commit(
    store: MemoryStore, workspace: WorkspaceId, caplog: pytest.LogCaptureFixture
) -> None:
    """Only that scope's history is refused, as any damage is (decision 0395): the others stay,
    and nothing is set aside, which would take every scope's history with it."""
    store.replace_global(store.read_global().revision, "# Global\n")
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    ref = store.home.root / "history" / "refs" / "heads" / f"ws-{workspace.key}"
    ref.write_text("0" * 40 + "\n")  # a branch naming an object that is not there
    with caplog.at_level(logging.WARNING, logger="remem.daemon"):
        second = MemoryStore(store.home).commit_workspace(workspace, first.revision, [put("beta")])
    assert second.status == "committed" and second.history is None
    assert all("Why it matters" not in r.getMessage() for r in caplog.records), "warnings carry no content"
    history = MemoryStore(store.home).history
    with pytest.raises(history_module.HistoryError, match="is damaged: entry 000000000000"):
        history.log(workspace.key)
    assert [e.actor.kind for e in history.log(None)] == ["cli"]
    assert not list(store.home.root.glob("history.*"))


def test_a_deleted_repository_is_started_again_with_a_warning(
    store: MemoryStore, workspace: WorkspaceId, caplog: pytest.LogCaptureFixture
) -> None:
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    shutil.rmtree(store.home.root / "history")
    with caplog.at_level(logging.WARNING, logger="remem.daemon"):
        second = MemoryStore(store.home).commit_workspace(workspace, first.revision, [put("beta")])
    assert second.status == "committed"
    assert any("was deleted" in r.getMessage() for r in caplog.records)
    assert [e.after for e in store.history.log(workspace.key)] == [second.revision, first.revision]


def test_a_file_where_the_repository_belongs_is_one_warning_and_set_aside(
    store: MemoryStore, workspace: WorkspaceId, caplog: pytest.LogCaptureFixture
) -> None:
    (store.home.root / "history").write_text("a file where the repository belongs\n")
    with caplog.at_level(logging.WARNING, logger="remem.daemon"):
        result = MemoryStore(store.home).commit_workspace(workspace, EMPTY, [put("alpha")])
    assert result.status == "committed" and {r.name for r in store.read_workspace(workspace).records} == {
        "alpha"
    }
    assert len(caplog.records) == 1 and "memory history" in caplog.records[0].getMessage()


def test_history_off_changes_nothing_of_memory(home: Home, workspace: WorkspaceId) -> None:
    store = MemoryStore(home, history=False)
    result = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    assert result.status == "committed" and result.history is None
    assert not (home.root / "history").exists()


def test_revert_is_a_new_generation_and_a_stale_one_is_a_conflict(
    store: MemoryStore, workspace: WorkspaceId
) -> None:
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    second = store.commit_workspace(workspace, first.revision, [put("alpha", body="Changed.\n"), put("beta")])
    methods = MemoryMethods(store.home)
    assert first.history is not None
    stale = asyncio.run(
        methods.revert(RevertParams(entry=first.history[:8], expectedRevision=first.revision))
    )
    assert stale.status == "conflict" and stale.revision == second.revision
    assert len(store.history.log(workspace.key)) == 2, "a refused revert leaves no entry"

    reverted = asyncio.run(methods.revert(RevertParams(entry=first.history[:8])))
    assert reverted.status == "committed" and reverted.revision == first.revision
    newest = store.history.log(workspace.key)[0]
    assert newest.id == reverted.history and newest.actor == Actor(kind="revert", reverts=first.history)
    assert {r.name: r.content for r in store.read_workspace(workspace).records} == {
        "alpha": "Why it matters.\n"
    }
    again = asyncio.run(methods.revert(RevertParams(entry=first.history)))
    assert again.status == "no-change" and len(store.history.log(workspace.key)) == 3


def test_undoing_an_entry_brings_back_the_state_before_it_also_before_the_first(
    store: MemoryStore, workspace: WorkspaceId
) -> None:
    """An undo reverted to the entry's parent, so a scope's first change, which has none, could
    not be undone: `before` brings back the state before any entry, the empty one."""
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    second = store.commit_workspace(workspace, first.revision, [put("beta")])
    methods = MemoryMethods(store.home)
    assert first.history is not None and second.history is not None
    undone = asyncio.run(methods.revert(RevertParams(entry=second.history, before=True)))
    assert undone.status == "committed" and undone.revision == first.revision
    assert store.history.log(workspace.key)[0].actor == Actor(kind="revert", reverts=first.history)

    stale = RevertParams(entry=first.history, before=True, expectedRevision=second.revision)
    assert asyncio.run(methods.revert(stale)).status == "conflict"
    emptied = asyncio.run(methods.revert(RevertParams(entry=first.history, before=True)))
    assert emptied.status == "committed" and emptied.revision == EMPTY
    assert store.read_workspace(workspace).records == []
    newest = store.history.log(workspace.key)[0]
    assert newest.actor == Actor(kind="revert", reverts=None) and newest.after == EMPTY

    said = store.replace_global(store.read_global().revision, "Be brief.\n")
    assert said.history is not None
    assert asyncio.run(methods.revert(RevertParams(entry=said.history, before=True))).status == "committed"
    assert store.read_global().content == "" and store.read_global().revision == EMPTY


def test_a_first_entry_that_found_memory_there_is_not_undone_to_nothing(
    store: MemoryStore, workspace: WorkspaceId
) -> None:
    """A history started on memory already there opens with an entry of what it found: the
    state before it was never recorded, and undoing it to the empty scope deleted that memory."""
    first = store.commit_workspace(workspace, EMPTY, [put("alpha"), put("beta")])
    shutil.rmtree(store.home.root / "history")  # deleted, or set aside as damaged
    restarted = MemoryStore(store.home)
    restarted.commit_workspace(workspace, first.revision, [put("gamma")])
    found = restarted.history.log(workspace.key)[-1]
    assert (found.parent, found.actor.kind) == (None, "recovered")
    methods = MemoryMethods(store.home)
    with pytest.raises(RpcError) as refused:
        asyncio.run(methods.revert(RevertParams(entry=found.id, before=True)))
    assert (
        refused.value.code == HISTORY_REFUSED
        and "the state before it was never recorded" in refused.value.message
    )
    assert {r.name for r in restarted.read_workspace(workspace).records} == {"alpha", "beta", "gamma"}


def test_a_concurrent_commit_makes_the_revert_a_conflict(store: MemoryStore, workspace: WorkspaceId) -> None:
    """Another writer commits between the revert's plan and its commit: nothing is lost."""
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    second = store.commit_workspace(workspace, first.revision, [put("beta")])
    methods = MemoryMethods(store.home)
    planned = methods.store.workspace_files

    def plan_then_someone_commits(ws: WorkspaceId) -> dict[str, bytes]:
        files = planned(ws)
        MemoryStore(store.home).commit_workspace(workspace, second.revision, [put("gamma")])
        return files

    methods.store.workspace_files = plan_then_someone_commits  # type: ignore[method-assign]
    assert first.history is not None
    result = asyncio.run(methods.revert(RevertParams(entry=first.history)))
    assert result.status == "conflict"
    assert {r.name for r in store.read_workspace(workspace).records} == {"alpha", "beta", "gamma"}
    assert kinds(store, workspace.key) == ["cli", "cli", "cli"]


def test_the_cli_logs_diffs_shows_and_reverts(home: Home, workspace: WorkspaceId, tmp_path: Path) -> None:
    store = MemoryStore(home)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    second = store.commit_workspace(workspace, first.revision, [put("alpha", body="Corrected.\n")])
    assert first.history is not None and second.history is not None

    code, out, _ = run(home, "memory", "log", "--cwd", workspace.cwd)
    assert code == 0
    assert out.splitlines()[0].startswith(f"{second.history[:12]}  ") and "changed alpha (+1 -1)" in out
    code, out, _ = run(home, "memory", "log", "--cwd", workspace.cwd, "--json", "--no-stat")
    logged = json.loads(out)
    assert [e["id"] for e in logged["entries"]] == [second.history, first.history]
    assert logged["entries"][0]["stat"] is None

    code, out, _ = run(home, "memory", "diff", second.history[:10])
    assert code == 0 and "-Why it matters.\n+Corrected.\n" in out and "changed alpha" in out
    code, out, _ = run(home, "memory", "diff", first.history, second.history, "--json")
    assert json.loads(out)["stat"]["changed"] == ["alpha"]
    code, out, _ = run(home, "memory", "show", "--at", first.history[:10])
    assert code == 0 and "==> alpha.md <==" in out and "Why it matters." in out

    code, out, _ = run(home, "memory", "revert", first.history[:10], "--expected-revision", first.revision)
    assert code == 3 and "conflict" in out + _
    code, out, _ = run(home, "memory", "revert", first.history[:10], "--json")
    assert code == 0 and json.loads(out)["revision"] == first.revision

    code, _, err = run(home, "memory", "diff", "not-hex")
    assert code != 0 and "not a history entry id" in err
    code, _, err = run(home, "memory", "show", "--at", "0123456789")
    assert code != 0 and "names no history entry" in err
    code, out, _ = run(home, "memory", "log", "--global")
    assert code == 0 and out == "(no history yet)\n"
    text = tmp_path / "global.md"
    text.write_text("Be brief.\n")
    code, out, _ = run(home, "memory", "replace-global", "--expected-revision", EMPTY, "--file", str(text))
    assert code == 0 and kinds(store, None) == ["cli"]
    code, out, _ = run(home, "memory", "log", "--global")
    assert out.startswith(f"{store.history.log(None)[0].id[:12]}  ") and "cli  added GLOBAL.md (+1 -0)" in out
    code, _, err = run(home, "memory", "log", "--global", "--cwd", workspace.cwd)
    assert code != 0 and "different scopes" in err
    global_entry = store.history.log(None)[0].id
    code, out, err = run(home, "memory", "diff", global_entry, first.history)
    assert (code, out) == (1, "") and "are entries of different memories (Global memory, workspace " in err


def test_a_files_log_holds_the_entries_that_changed_it_wherever_they_lie(
    home: Home, workspace: WorkspaceId
) -> None:
    """A record's history was the workspace's newest entries filtered: one changed before them
    had none. `file` keeps the entries that added, changed or removed it from the whole log."""
    store = MemoryStore(home)
    added = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    revision = added.revision
    for n in range(3):
        revision = store.commit_workspace(workspace, revision, [put("beta", body=f"Take {n}.\n")]).revision
    removed = store.commit_workspace(workspace, revision, [delete("alpha")])
    methods = MemoryMethods(home)
    asked = HistoryLogParams(cwd=workspace.cwd, limit=2, file="alpha.md")
    result = asyncio.run(methods.log(asked))
    logged = result.entries
    assert [e.id for e in logged] == [removed.history, added.history] and result.more == 0
    assert [(e.stat.added, e.stat.removed) for e in logged if e.stat] == [([], ["alpha"]), (["alpha"], [])]
    asked = HistoryLogParams(cwd=workspace.cwd, limit=1, file="alpha.md")
    result = asyncio.run(methods.log(asked))
    assert ([e.id for e in result.entries], result.more) == ([removed.history], 1)  # not the 3 of beta
    global_log = HistoryLogParams(file="GLOBAL.md")
    assert asyncio.run(methods.log(global_log)).entries == []


def test_the_log_reads_what_no_daemon_saw(home: Home, workspace: WorkspaceId) -> None:
    store = MemoryStore(home)
    store.commit_workspace(workspace, EMPTY, [put("alpha")])
    (store.folder(workspace) / "alpha.md").write_text("broken by hand\n")
    result = asyncio.run(MemoryMethods(home).log(HistoryLogParams(cwd=workspace.cwd)))
    assert [e.actor.kind for e in result.entries] == ["recovered", "cli"]
    assert result.entries[0].stat is not None and result.entries[0].stat.changed == ["alpha"]


def test_a_lock_file_a_dead_writer_left_does_not_stop_the_history(
    store: MemoryStore, workspace: WorkspaceId
) -> None:
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    branch = store.home.root / "history" / "refs" / "heads" / f"ws-{workspace.key}"
    branch.with_name(branch.name + ".lock").write_text("killed while moving the branch\n")
    second = store.commit_workspace(workspace, first.revision, [put("beta")])
    assert second.history is not None and kinds(store, workspace.key) == ["cli", "cli"]


def commits(store: MemoryStore, workspace: WorkspaceId, names: list[str]) -> None:
    for name in names:
        revision = store.read_workspace(workspace).revision
        assert store.commit_workspace(workspace, revision, [put(name)]).status == "committed"


def walked(home: Home, key: str) -> list[str]:
    """The branch's entry ids as git itself walks them, newest first."""
    repo = pygit2.Repository(str(home.root / "history"))
    return [str(c.id) for c in repo.walk(repo.references[f"refs/heads/ws-{key}"].target)]


def cached(home: Home) -> LogCache:
    return LogCache(home.root / "history", home.locks / "history-log.lock")


def parsed_commits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the commits the history parses from here on."""
    seen: list[str] = []
    line = history_module._line

    def counted(commit: pygit2.Commit) -> object:
        seen.append(str(commit.id))
        return line(commit)

    monkeypatch.setattr(history_module, "_line", counted)
    return seen


def test_a_fresh_process_logs_from_the_cache_and_parses_only_newer_commits(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    commits(store, workspace, ["alpha", "beta", "gamma"])
    first = store.history.log(workspace.key)
    assert [e.id for e in first] == walked(store.home, workspace.key)
    commits(store, workspace, ["delta", "epsilon"])

    parsed = parsed_commits(monkeypatch)
    fresh = MemoryStore(store.home).history.log(workspace.key)  # as a new process would
    assert [e.id for e in fresh] == walked(store.home, workspace.key)
    assert parsed == [e.id for e in fresh[:2]], "the three cached entries are not parsed again"
    assert fresh[2:] == first and fresh[0].parent == fresh[1].id
    kept = cached(store.home).load(f"ws-{workspace.key}")
    assert kept.clean and [line.id for line in reversed(kept.lines)] == [e.id for e in fresh]

    parsed.clear()
    assert MemoryStore(store.home).history.log(workspace.key) == fresh and parsed == []
    assert len(MemoryStore(store.home).history.log(workspace.key, limit=2)) == 2


def test_a_damaged_log_cache_is_cut_at_the_damage_and_rewritten(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    commits(store, workspace, ["alpha", "beta"])
    store.history.log(workspace.key)
    commits(store, workspace, ["gamma"])
    MemoryStore(store.home).history.log(workspace.key)  # a second block
    path = store.home.root / "history" / FOLDER / f"ws-{workspace.key}"
    data = bytearray(path.read_bytes())
    data[-20] ^= 1  # inside the second block's checksum line
    path.write_bytes(bytes(data))
    kept = cached(store.home).load(f"ws-{workspace.key}")
    assert not kept.clean and len(kept.lines) == 2

    parsed = parsed_commits(monkeypatch)
    entries = MemoryStore(store.home).history.log(workspace.key)
    assert [e.id for e in entries] == walked(store.home, workspace.key) and len(parsed) == 1
    repaired = cached(store.home).load(f"ws-{workspace.key}")
    assert repaired.clean and len(repaired.lines) == 3


def test_a_cache_of_another_history_is_replaced(home: Home, tmp_path: Path, workspace: WorkspaceId) -> None:
    other = Home(tmp_path / "other")
    store, elsewhere = MemoryStore(home), MemoryStore(other)
    commits(store, workspace, ["alpha", "beta"])
    commits(elsewhere, workspace, ["gamma", "delta", "epsilon"])
    elsewhere.history.log(workspace.key)
    folder = home.root / "history" / FOLDER
    folder.mkdir()
    shutil.copy(other.root / "history" / FOLDER / f"ws-{workspace.key}", folder)  # same branch name

    entries = MemoryStore(home).history.log(workspace.key)
    assert [e.id for e in entries] == walked(home, workspace.key)
    assert [e.id for e in reversed(cached(home).load(f"ws-{workspace.key}").lines)] == walked(
        home, workspace.key
    )


@pytest.mark.slow
@pytest.mark.parametrize("point", LOG_CACHE_POINTS)
def test_a_crash_while_writing_the_log_cache_never_corrupts_it(
    point: str, store: MemoryStore, workspace: WorkspaceId
) -> None:
    commits(store, workspace, ["alpha", "beta"])
    if point.endswith("mid-append"):
        store.history.log(workspace.key)  # a cache to append to
    commits(store, workspace, ["gamma", "delta"])
    crashed = run_driver(point, "log", str(store.home.root), workspace.cwd)
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    kept = cached(store.home).load(f"ws-{workspace.key}")
    oldest_first = walked(store.home, workspace.key)[::-1]
    assert [line.id for line in kept.lines] == oldest_first[: len(kept.lines)], "a prefix, or nothing"
    assert len(kept.lines) == (2 if point.endswith("mid-append") else 0)

    entries = MemoryStore(store.home).history.log(workspace.key)  # the next process
    assert [e.id for e in entries] == walked(store.home, workspace.key)
    repaired = cached(store.home).load(f"ws-{workspace.key}")
    assert repaired.clean and [line.id for line in reversed(repaired.lines)] == walked(
        store.home, workspace.key
    )
    assert not [p for p in (store.home.root / "history" / FOLDER).iterdir() if p.name.startswith(".")]


def test_a_generations_line_counts_are_those_of_its_diff() -> None:
    record = b"---\nname: a\ndescription: d\ntype: feedback\n---\n++i stays\n"
    added, removed = stat({}, {"a.md": record}), stat({"a.md": record}, {})
    assert (added.added, added.insertions, added.deletions) == (["a"], 6, 0)
    assert (removed.removed, removed.insertions, removed.deletions) == (["a"], 0, 6)
    changed = stat({"a.md": record}, {"a.md": record.replace(b"++i", b"--j")})
    assert (changed.changed, changed.insertions, changed.deletions) == (["a"], 1, 1)


def _files(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_repository_linked_out_of_the_home_is_never_written_nor_read(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    repository, outside = store.home.root / "history", tmp_path / "outside"
    shutil.move(repository, outside)
    repository.symlink_to(outside)
    held = _files(outside)
    with caplog.at_level(logging.WARNING, logger="remem.daemon"):
        second = store.commit_workspace(workspace, first.revision, [put("beta")])
    assert second.status == "committed" and second.history is None, "memory commits are unaffected"
    said = f"remem's home {store.home.root} cannot be used: {repository} is a symbolic link"
    assert any(said in r.getMessage() for r in caplog.records), "said whole, as the home's problem"
    with pytest.raises(HomeUnusable) as refused:  # a read says it whole, as the home's problem
        store.history.log(workspace.key)
    assert str(refused.value).endswith("or choose a home that holds it with --home or $REMEM_HOME")
    assert _files(outside) == held, "nothing written through it"


@pytest.mark.parametrize(
    "inside", ["objects", "objects/pack", "refs", "refs/heads", "a branch", "a pack", "config"]
)
def test_a_link_inside_the_repository_is_never_written_nor_read_through(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path, inside: str, caplog: pytest.LogCaptureFixture
) -> None:
    # libgit2 and the pack writer follow links below the repository's own folder: a link there
    # took memory's content (secrets included) out of the home, as a link at `history` would.
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    repository = store.home.root / "history"
    named = {
        "a branch": f"refs/heads/ws-{workspace.key}",
        "a pack": next(repository.glob("objects/pack/*.pack")),
    }
    linked = repository / named.get(inside, inside)
    outside = tmp_path / "outside" / linked.name
    outside.parent.mkdir()
    shutil.move(linked, outside)
    linked.symlink_to(outside)
    held = _files(outside.parent)
    with caplog.at_level(logging.WARNING, logger="remem.daemon"):
        second = store.commit_workspace(workspace, first.revision, [put("beta")])
    assert second.status == "committed" and second.history is None, "memory commits are unaffected"
    said = f"remem's home {store.home.root} cannot be used: {linked} is a symbolic link"
    assert any(said in r.getMessage() for r in caplog.records)
    with pytest.raises(HomeUnusable) as refused:  # a read says it whole, as the home's problem
        store.history.log(workspace.key)
    assert str(refused.value).startswith(said)
    assert _files(outside.parent) == held, "nothing written through it"


@pytest.mark.parametrize("linked", ["cache", "marker"])
def test_a_log_cache_or_marker_linked_out_of_the_home_is_never_written(
    home: Home, workspace: WorkspaceId, tmp_path: Path, linked: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    store = MemoryStore(home)
    assert store.home.state.is_dir()  # laid out at its first use: before the link is made
    if linked == "cache":  # a repository of its own, its cache folder a link
        commits(store, workspace, ["alpha", "beta"])
        (home.root / "history" / FOLDER).symlink_to(outside)
    else:  # the repository made afresh, the file that says it was a link
        (home.state / "history-started").symlink_to(outside / "history-started")
        commits(store, workspace, ["alpha", "beta"])
    assert len(store.history.log(workspace.key)) == 2, "read by walking the repository"
    assert list(outside.iterdir()) == [], "nothing written through it"


def test_a_files_log_leaves_out_a_first_entry_that_found_memory_there(
    home: Home, workspace: WorkspaceId
) -> None:
    """A history started on memory already there: its first entry changed no file (its stat
    says so), yet a file's log listed it for every file, as if from an empty scope."""
    store = MemoryStore(home)
    made = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    shutil.rmtree(home.root / "history")
    for left in [home.state / "history-started", *home.state.glob("history-intent-*")]:
        left.unlink()  # as a home whose history was never made
    methods = MemoryMethods(home)
    [found] = asyncio.run(methods.log(HistoryLogParams(cwd=workspace.cwd))).entries
    assert found.before == found.after == made.revision
    changed = MemoryStore(home).commit_workspace(workspace, made.revision, [put("alpha", body="Later.\n")])

    logged = asyncio.run(methods.log(HistoryLogParams(cwd=workspace.cwd, file="alpha.md"))).entries

    assert [e.id for e in logged] == [changed.history]
