"""A history damaged on disk (an object's bytes altered, a pack removed) or that could not be
written: every read says it is damaged and what to do, never a bug; an id is answered only for an
entry that was written; and a state the history did not follow is never told as a hand edit."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pygit2
import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.memory.git_pack import pack_ids, small_packs
from remem.daemon.memory.history import HAND_EDIT
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.pack_merge import MERGED_MAX
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import CommitResult
from remem.daemon.protocol.rpc import (
    HISTORY_REFUSED,
    CommitWorkspaceParams,
    HistoryDiffParams,
    HistoryLogParams,
    RpcError,
)
from remem.daemon.server.memory_methods import MemoryMethods
from tests.unwritable import unwritable

from .factory import put
from .test_crash_recovery import EMPTY

DAMAGED = ("is damaged", "move history aside")


def run(home: Home, *args: str) -> tuple[int, str, str]:
    """The CLI without a daemon; what it did not catch is raised (the real CLI's exit 4)."""
    result = CliRunner().invoke(cli, ["--home", str(home.root), "--no-daemon", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def _entries(home: Home, workspace: WorkspaceId) -> tuple[CommitResult, CommitResult]:
    """Two entries, the second changing the first's only record (they share no blob), the second
    in a pack the first's is not: a merge of the small packs (after one entry in 32, by its id)
    puts both in one, and damage to the first's would then take the newest entry too."""
    store = MemoryStore(home)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    for n in range(8):
        second = store.commit_workspace(workspace, first.revision, [put("alpha", body=f"Corrected {n}.\n")])
        assert first.history is not None and second.history is not None
        if _pack_of(home, second.history)[0] != _pack_of(home, first.history)[0]:
            return first, second
        first = second
    raise AssertionError("every entry was merged into the pack of the one before")


def _object_of(home: Home, entry: str, kind: str) -> str:
    """The id of entry `entry`'s commit, tree or (first) blob."""
    commit = pygit2.Repository(str(home.root / "history"))[entry]
    return {"commit": entry, "tree": str(commit.tree_id), "blob": str(next(iter(commit.tree)).id)}[kind]


def _pack_of(home: Home, oid: str) -> tuple[Path, int]:
    """The index of the pack holding object `oid` (an entry's own, or a merged one), its position."""
    for index in (home.root / "history" / "objects" / "pack").glob("*.idx"):
        ids = pack_ids(index)
        if oid in ids:
            return index, ids.index(oid)
    raise AssertionError(f"no pack holds {oid}")


def _corrupt(home: Home, oid: str) -> None:
    """Flip one byte in the middle of object `oid`'s packed bytes (`git verify-pack` finds it)."""
    index, at = _pack_of(home, oid)
    table = index.read_bytes()
    count = len(pack_ids(index))
    offsets = struct.unpack_from(f">{count}I", table, 8 + 256 * 4 + 24 * count)
    pack = bytearray(index.with_suffix(".pack").read_bytes())
    end = min([o for o in offsets if o > offsets[at]] + [len(pack) - 20])
    middle = (offsets[at] + end) // 2
    pack[middle] ^= 0xFF
    index.with_suffix(".pack").write_bytes(bytes(pack))  # in place: the same file, as a disk fault


def _out_of_the_pack_of(home: Home, workspace: WorkspaceId, oid: str, last: CommitResult) -> CommitResult:
    """A commit after `last` whose entry, and the one before it, lie in other packs than entry
    `oid`'s: a merge of the small packs (after one entry in 32, by its id) may take them in."""
    store = MemoryStore(home)
    for n in range(8):
        before, last = (
            last,
            store.commit_workspace(workspace, last.revision, [put("alpha", body=f"Then {n}.\n")]),
        )
        assert before.history is not None and last.history is not None
        packs = {_pack_of(home, entry)[0] for entry in (before.history, last.history)}
        if _pack_of(home, oid)[0] not in packs:
            return last
    raise AssertionError("every entry was merged into the pack of the oldest")


def _remove_pack_of(home: Home, oid: str) -> None:
    index, _ = _pack_of(home, oid)
    index.with_suffix(".pack").unlink()
    index.unlink()


def _refused_as_damaged(home: Home, *args: str) -> str:
    code, out, err = run(home, *args, "--json")
    assert code == 1, (code, out, err)
    said = json.loads(out)["error"]
    assert said["code"] == "HISTORY_REFUSED", (out, err)
    assert all(words in said["message"] for words in DAMAGED) and "internal error" not in err
    return str(said["message"])


def _kinds(methods: MemoryMethods, workspace: WorkspaceId) -> list[str]:
    result = asyncio.run(methods.log(HistoryLogParams(cwd=workspace.cwd)))
    return [e.actor.kind for e in result.entries]


def _edit_by_hand(methods: MemoryMethods, workspace: WorkspaceId) -> None:
    record = methods.store.folder(workspace) / "alpha.md"
    record.write_text(record.read_text().replace("Why it matters.", "Corrected by hand."))


@contextmanager
def _daemon(home: Home) -> Iterator[MemoryMethods]:
    """The daemon's memory methods, watching, past their check of every scope at start."""
    methods = MemoryMethods(home, watch=True)
    try:
        asyncio.run(methods.reconcile_history())
        yield methods
    finally:
        assert methods.cache is not None
        methods.cache.close()


@pytest.mark.parametrize("kind", ["commit", "tree", "blob"])
def test_a_corrupt_object_is_said_damaged_by_log_and_diff(
    home: Home, workspace: WorkspaceId, kind: str
) -> None:
    first, second = _entries(home, workspace)
    _corrupt(home, _object_of(home, str(first.history), kind))
    assert second.history is not None
    _refused_as_damaged(home, "memory", "log", "--cwd", workspace.cwd)
    _refused_as_damaged(home, "memory", "diff", second.history)
    _refused_as_damaged(home, "memory", "diff", second.history[:10])
    code, out, _ = run(home, "memory", "log", "--cwd", workspace.cwd, "--no-stat", "--json")
    if kind == "commit":  # the walk reads the commits alone
        assert code == 1 and json.loads(out)["error"]["code"] == "HISTORY_REFUSED"
    else:
        listed = [e["id"] for e in json.loads(out)["entries"]]  # after any `_entries` made before them
        assert code == 0 and listed[:2] == [second.history, first.history]


def test_a_diff_of_an_entry_whose_parent_is_gone_is_said_damaged(home: Home, workspace: WorkspaceId) -> None:
    first, second = _entries(home, workspace)
    _remove_pack_of(home, str(first.history))
    assert second.history is not None
    message = _refused_as_damaged(home, "memory", "diff", second.history)
    assert f"entry {str(first.history)[:12]} (the one before {second.history[:12]})" in message
    with _daemon(home) as methods, pytest.raises(RpcError) as refused:  # as the daemon answers
        asyncio.run(methods.diff(HistoryDiffParams(entry=second.history)))
    assert refused.value.code == HISTORY_REFUSED and "is damaged" in refused.value.message


@pytest.mark.parametrize("damage", [_corrupt, _remove_pack_of])
def test_the_damage_names_the_first_entry_that_does_not_read(
    home: Home, workspace: WorkspaceId, damage: Callable[[Home, str], None]
) -> None:
    first, _ = _entries(home, workspace)
    damage(home, str(first.history))
    message = _refused_as_damaged(home, "memory", "log", "--cwd", workspace.cwd, "--no-stat")
    assert f"entry {str(first.history)[:12]} (number 2 of ws-{workspace.key}, newest first)" in message


@pytest.mark.parametrize("damage", [_corrupt, _remove_pack_of])
def test_show_and_revert_of_an_unreadable_entry_say_it_is_damaged(
    home: Home, workspace: WorkspaceId, damage: Callable[[Home, str], None]
) -> None:
    first, _ = _entries(home, workspace)
    damage(home, str(first.history))
    for args in (["show", "--at", str(first.history)[:10]], ["revert", str(first.history)]):
        message = _refused_as_damaged(home, "memory", *args)
        assert str(first.history)[:10] in message and "names no history entry" not in message


def test_a_commit_whose_entry_was_not_written_names_none(
    home: Home, workspace: WorkspaceId, tmp_path: Path
) -> None:
    _, second = _entries(home, workspace)
    changes = tmp_path / "changes.json"
    changes.write_text(json.dumps([put("beta").model_dump(mode="json")]))
    args = ["memory", "apply", "--cwd", workspace.cwd, "--changes", str(changes), "--json"]
    with unwritable(home.root / "history" / "objects" / "pack"):
        code, out, err = run(home, *args, "--expected-revision", second.revision)
    answer = json.loads(out)
    assert code == 0 and answer["status"] == "committed" and answer["history"] is None, (out, err)


def test_the_daemons_own_commit_whose_entry_was_not_written_is_no_hand_edit(
    home: Home, workspace: WorkspaceId
) -> None:
    first = MemoryStore(home).commit_workspace(workspace, EMPTY, [put("alpha")])
    with _daemon(home) as methods:
        with unwritable(home.root / "history" / "objects" / "pack"):
            params = CommitWorkspaceParams(
                cwd=workspace.cwd, expectedRevision=first.revision, changes=[put("beta")]
            )
            assert asyncio.run(methods.commit_workspace(params)).status == "committed"
            methods.store.history.flush()  # its entry failed to be written
        asyncio.run(methods.scope_changed(workspace.key))  # the watcher sees the commit's files
        # the commit's own, by the intent it wrote before it published (decision 0442)
        assert _kinds(methods, workspace) == ["cli", "cli"]
        _edit_by_hand(methods, workspace)  # once the scope's entries are written again, it is
        assert _kinds(methods, workspace) == ["hand-edit", "cli", "cli"]


def test_a_history_deleted_under_the_daemon_starts_again_with_what_it_finds_as_recovered(
    home: Home, workspace: WorkspaceId
) -> None:
    MemoryStore(home).commit_workspace(workspace, EMPTY, [put("alpha")])
    with _daemon(home) as methods:
        assert _kinds(methods, workspace) == ["cli"]
        shutil.rmtree(home.root / "history")
        assert _kinds(methods, workspace) == ["recovered"]
        _edit_by_hand(methods, workspace)
        assert _kinds(methods, workspace) == ["hand-edit", "recovered"]


def test_a_hand_edit_a_commit_meets_before_the_watcher_looked_is_a_hand_edit(
    home: Home, workspace: WorkspaceId
) -> None:
    """The state a daemon's commit starts from, unrecorded because the watcher's debounce had not
    ended, was labelled `recovered`: made while the daemon watched, it is the user's hand edit."""
    with _daemon(home) as methods:
        first = CommitWorkspaceParams(cwd=workspace.cwd, expectedRevision=EMPTY, changes=[put("alpha")])
        assert asyncio.run(methods.commit_workspace(first)).status == "committed"
        _edit_by_hand(methods, workspace)  # the watcher has not looked yet
        edited = methods.store.read_workspace(workspace).revision
        then = CommitWorkspaceParams(cwd=workspace.cwd, expectedRevision=edited, changes=[put("beta")])
        assert asyncio.run(methods.commit_workspace(then)).status == "committed"
        methods.store.history.flush()
        assert _kinds(methods, workspace) == ["cli", "hand-edit", "cli"]


@pytest.mark.slow
def test_a_daemon_whose_history_cannot_record_says_so_with_the_log(
    home: Home, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the daemon `memory log` showed the history as it was, exit 0, no word of the
    commit it lacked: the failure was only in the daemon's log (without the daemon, stderr said
    it). The answer now says why, until an entry of the scope is written: on stderr, or given
    `--json` in its `problem` alone, stderr empty as without the daemon (decision 0509)."""
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    first = MemoryStore(home).commit_workspace(workspace, EMPTY, [put("alpha")])
    changes = json.dumps([{"action": "put", "record": put("beta").record.model_dump()}])
    try:
        with unwritable(home.root / "history" / "objects" / "pack"):
            applied = subprocess.run(
                [*_CLI, "--home", str(home.root), "memory", "apply", "--cwd", workspace.cwd,
                 "--expected-revision", first.revision, "--changes", "-", "--json"],
                input=changes, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert applied.returncode == 0, applied.stderr
            logged = _log_through_the_daemon(home, workspace)
            said = _log_through_the_daemon(home, workspace, "--no-stat")
        answer = json.loads(logged.stdout)
        assert logged.returncode == 0 and len(answer["entries"]) == 1 and logged.stderr == "", logged
        assert answer["problem"].startswith("the history could not record what changed ("), answer
        assert said.returncode == 0 and len(said.stdout.splitlines()) == 1, said
        assert said.stderr.startswith("remem: warning: the history could not record what changed ("), said
        again = _log_through_the_daemon(home, workspace)  # its state recorded now, no warning
        recorded = json.loads(again.stdout)
        kinds = [e["actor"]["kind"] for e in recorded["entries"]]
        assert kinds == ["cli", "cli"] and recorded["problem"] is None, recorded
    finally:
        subprocess.run([*_CLI, "--home", str(home.root), "daemon", "stop"], capture_output=True, timeout=60)


_CLI = [sys.executable, "-m", "remem.daemon"]


def _log_through_the_daemon(
    home: Home, workspace: WorkspaceId, said: str = "--json"
) -> subprocess.CompletedProcess[str]:
    """`memory log` of `workspace`, `--json` unless `said` asks for its rows."""
    command = [*_CLI, "--home", str(home.root), "memory", "log", "--cwd", workspace.cwd, said]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_a_fifo_among_the_packs_is_passed_by_not_waited_on(
    store: MemoryStore, workspace: WorkspaceId
) -> None:
    """Looking for small packs to merge opened every `*.idx` plainly: a FIFO named so held the
    committing thread, and with it every commit, until something wrote to it."""
    store.commit_workspace(workspace, EMPTY, [put("alpha")])
    pack_dir = store.home.root / "history" / "objects" / "pack"
    os.mkfifo(pack_dir / "pack-0000.idx")
    found = []
    worker = threading.Thread(target=lambda: found.extend(small_packs(pack_dir, MERGED_MAX)), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "it waited on the FIFO"
    assert found and all(p.is_file() for p in found)


def test_a_file_remem_reads_none_of_is_said_with_the_log_and_names_no_path(
    home: Home, workspace: WorkspaceId
) -> None:
    """A record named in bytes that are not UTF-8 stopped every entry of the workspace, and
    `memory log` listed the history as if it were whole."""
    store = MemoryStore(home)
    store.commit_workspace(workspace, EMPTY, [put("alpha")])
    folder = store.folder(workspace)
    (folder / "alpha.md").write_text((folder / "alpha.md").read_text() + "A hand edit.\n")
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.md"), "wb") as odd:
        odd.write(b"---\nname: cafe\n---\n")
    code, _, err = run(home, "memory", "log", "--cwd", workspace.cwd)
    assert code == 0 and "could not read" in err and "remem/file-name-encoding" in err, err
    assert str(home.root) not in err, err
    assert store.sync_history(workspace.key, HAND_EDIT) is None  # as the daemon's watcher looks
    trouble = store.history.trouble(workspace.key)  # what the daemon says with its log, to agents too
    assert trouble is not None and "(remem/file-name-encoding)" in trouble and str(home.root) not in trouble


def test_a_failure_to_record_is_no_longer_said_once_the_history_ends_with_the_state(
    home: Home, workspace: WorkspaceId
) -> None:
    """A scope nothing changed in since: no entry is ever due, so the warning lasted for good."""
    store = MemoryStore(home)
    store.commit_workspace(workspace, EMPTY, [put("alpha")])
    store.history.unreadable(workspace.key, ["remem/encoding"])  # a look that could not read its files
    assert store.history.trouble(workspace.key) is not None
    assert store.sync_history(workspace.key, HAND_EDIT) is None  # it ends with the state already
    assert store.history.trouble(workspace.key) is None


def test_a_branch_file_that_does_not_read_is_damage_not_a_bug(home: Home, workspace: WorkspaceId) -> None:
    first = MemoryStore(home).commit_workspace(workspace, EMPTY, [put("alpha")])
    (home.root / "history" / "refs" / "heads" / f"ws-{workspace.key}").write_text("garbage\n")
    code, _, err = run(home, "memory", "log", "--cwd", workspace.cwd)
    assert code == 1 and f"damaged: its branch ws-{workspace.key} cannot be read" in err, err
    second = MemoryStore(home).commit_workspace(workspace, first.revision, [put("beta")])
    assert second.status == "committed" and second.history is None


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_a_global_file_made_a_link_or_fifo_is_announced_invalid_not_a_failed_look(
    home: Home, tmp_path: Path, kind: str
) -> None:
    # The watcher's look at Global raised from its history's look (a link or a FIFO is refused
    # there), so it logged a traceback and editors were never told Global had gone invalid.
    heard: list[tuple[str, object]] = []
    methods = MemoryMethods(home, lambda method, news: heard.append((method, news)), watch=True)
    try:
        asyncio.run(methods.reconcile_history())
        if kind == "fifo":
            os.mkfifo(home.memory / "GLOBAL.md")
        else:
            target = tmp_path / "elsewhere"
            target.write_text("Read from outside the home.\n")
            (home.memory / "GLOBAL.md").symlink_to(target)
        asyncio.run(methods.scope_changed(None))
    finally:
        assert methods.cache is not None
        methods.cache.close()
    [(method, news)] = heard
    assert method == "memory/changed" and news.scope == "global" and news.valid is False  # type: ignore[attr-defined]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_limited_log_lists_its_entries_when_an_older_one_is_damaged(
    home: Home, workspace: WorkspaceId, as_json: bool
) -> None:
    """An entry older than the limit cannot be read: the newer ones are listed and the rest is
    said uncounted, where counting them made the whole log an internal error."""
    first, second = _entries(home, workspace)
    third = _out_of_the_pack_of(home, workspace, str(first.history), second)
    _remove_pack_of(home, str(first.history))

    code, out, err = run(
        home, "memory", "log", "--cwd", workspace.cwd, "--limit", "1", *(["--json"] if as_json else [])
    )

    assert code == 0, (out, err)
    if as_json:
        logged = json.loads(out)
        assert ([e["id"] for e in logged["entries"]], logged["more"]) == ([third.history], None)
    else:
        assert out.splitlines()[1:] == ["... and older entries (--limit 0 lists all)"], out
