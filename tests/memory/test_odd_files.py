"""A FIFO, symlink or folder where remem reads memory-side files is never waited on nor followed.

`MEMORY.md` (generated) is replaced without being read; `workspace.json` (a label) leaves the
project folder unknown, named in the log; a journal or an agent-update intent is a specific
problem; the memory overview shows a record or `GLOBAL.md` as lint reports it, without reading
it. Every case that once blocked runs with a deadline (`within`): a regression fails the test
instead of hanging the suite, and the stuck reader is then let go.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.agent_updates.audit import AuditError, AuditTrail, scope_name
from remem.daemon.agent_updates.service import AgentUpdates
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.memory import canonical
from remem.daemon.memory.history import HAND_EDIT, RECOVERED
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.journal import JOURNAL_NAME
from remem.daemon.memory.lint import lint_paths, lint_workspace_folder
from remem.daemon.memory.overview import global_health, workspace_health
from remem.daemon.memory.record import INDEX_FILE
from remem.daemon.memory.snapshot_cache import SnapshotCache
from remem.daemon.memory.store import WORKSPACE_INFO, MemoryInvalid, MemoryStore
from remem.daemon.server.runtime import DaemonPaths
from tests.waiting import wait_until

from .factory import put
from .odd_files import OUTSIDE_RECORD, put_odd, within
from .test_store import EMPTY


def _committed(store: MemoryStore, workspace: WorkspaceId) -> Path:
    """The workspace's folder, after one commit wrote `alpha`, `MEMORY.md` and `workspace.json`."""
    assert store.commit_workspace(workspace, EMPTY, [put("alpha")]).status == "committed"
    return store.folder(workspace)


def _is_regular(path: Path) -> bool:
    return stat.S_ISREG(path.lstat().st_mode)


# -- MEMORY.md: generated, so replaced without being read ----------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "link to an outside fifo"])
def test_an_index_that_is_a_fifo_is_replaced_without_waiting(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path, kind: str
) -> None:
    folder = _committed(store, workspace)
    index = folder / INDEX_FILE
    wanted = index.read_bytes()
    fifo = put_odd(index, kind, tmp_path)
    assert fifo is not None
    assert within(lambda: store.regenerate_index(workspace), fifo) is True
    assert _is_regular(index) and index.read_bytes() == wanted
    assert fifo == index or stat.S_ISFIFO(fifo.lstat().st_mode), "an outside FIFO is left alone"
    # The scope's exclusive lock was let go: the workspace reads and commits as before.
    revision = store.read_workspace(workspace).revision
    assert store.commit_workspace(workspace, revision, [put("beta")]).status == "committed"
    assert b"beta" in index.read_bytes()


def test_an_index_linked_out_of_the_home_is_replaced_not_read_through(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path
) -> None:
    index = _committed(store, workspace) / INDEX_FILE
    wanted = index.read_bytes()
    outside = tmp_path / "outside.md"
    outside.write_bytes(wanted)  # what the index should hold: read through, it would look in sync
    index.unlink()
    index.symlink_to(outside)
    assert store.regenerate_index(workspace) is True
    assert not index.is_symlink() and index.read_bytes() == wanted
    assert outside.read_bytes() == wanted


# -- workspace.json: a label, so an odd one leaves the project folder unknown --------------------


def test_a_fifo_workspace_info_leaves_the_cwd_unknown_and_the_memory_working(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = _committed(store, workspace)
    assert store.workspace_of(workspace.key) == workspace, "a plain workspace.json names the project"
    info = folder / WORKSPACE_INFO
    put_odd(info, "fifo", tmp_path)
    with caplog.at_level(logging.WARNING, logger="remem.daemon"):
        found = within(lambda: store.workspace_of(workspace.key), info)
        assert found == WorkspaceId(key=workspace.key, cwd="")
        store.workspace_of(workspace.key)
    warnings = [r.getMessage() for r in caplog.records if str(info) in r.getMessage()]
    assert len(warnings) == 1, "named in the log, once"
    assert "not a regular file" in warnings[0] and "project folder is unknown" in warnings[0]
    # What the daemon does at start for every workspace, holding the scope's exclusive lock: a
    # hand edit made while no daemon watched gets its history entry.
    (folder / "alpha.md").write_text((folder / "alpha.md").read_text() + "Edited by hand.\n")
    assert within(lambda: store.sync_history(workspace.key, RECOVERED), info) is not None
    assert within(lambda: store.sync_history(workspace.key, HAND_EDIT), info) is None, "recorded"
    assert [r.name for r in store.read_workspace(workspace).records] == ["alpha"]
    assert stat.S_ISFIFO(info.lstat().st_mode), "left for the person the log names it to"


def test_a_workspace_info_linked_out_of_the_home_is_not_followed(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path
) -> None:
    info = _committed(store, workspace) / WORKSPACE_INFO
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"cwd": "/somewhere/else", "createdAt": "2026-01-01T00:00:00.000Z"}))
    info.unlink()
    info.symlink_to(outside)
    assert store.workspace_of(workspace.key).cwd == ""


@pytest.mark.slow
def test_the_daemon_starts_and_serves_with_a_fifo_workspace_info(
    home: Home,
    store: MemoryStore,
    workspace: WorkspaceId,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    info = _committed(store, workspace) / WORKSPACE_INFO
    put_odd(info, "fifo", tmp_path)
    monkeypatch.delenv(NO_DAEMON_ENV)
    remem = [sys.executable, "-m", "remem.daemon", "--home", str(home.root)]
    daemon = subprocess.Popen([*remem, "daemon", "run"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # Before it serves, the daemon records every workspace's state in its history.
        wait_until(lambda: DaemonPaths(home).read_status() is not None, 60, what="the daemon to serve")
        other = tmp_path / "Other"
        other.mkdir()
        for project in (other, Path(workspace.cwd)):
            shown = subprocess.run(
                [*remem, "memory", "show", "--cwd", str(project), "--json"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert shown.returncode == 0, shown.stderr
        assert [r["name"] for r in json.loads(shown.stdout)["workspace"]["records"]] == ["alpha"]
    finally:
        daemon.terminate()
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:  # blocked on the FIFO, it would not exit on SIGTERM
            daemon.kill()
            daemon.wait()


# -- the journal of an interrupted commit: unreadable, so named ----------------------------------


@pytest.mark.parametrize("kind", ["fifo", "link out of the home"])
def test_an_odd_journal_is_named_not_waited_on_nor_followed(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path, kind: str
) -> None:
    folder = _committed(store, workspace)
    journal = folder / JOURNAL_NAME
    if kind == "fifo":
        os.mkfifo(journal)
    else:  # an empty journal, which read through would be "rolled forward" and removed
        outside = tmp_path / "outside.json"
        outside.write_text(json.dumps({"revision": EMPTY, "steps": []}))
        journal.symlink_to(outside)
    with pytest.raises(MemoryInvalid) as refused:
        within(lambda: store.read_workspace(workspace), journal)
    [file] = refused.value.files
    assert (file.path, [d.code for d in file.diagnostics]) == (str(journal), ["remem/unreadable-journal"])
    assert "delete the journal" in file.diagnostics[0].message
    assert journal.is_symlink() or stat.S_ISFIFO(journal.lstat().st_mode), "left for a person"
    journal.unlink()
    assert [r.name for r in store.read_workspace(workspace).records] == ["alpha"]


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_an_odd_thing_at_a_temps_name_is_left_by_the_crash_recovery(
    store: MemoryStore, workspace: WorkspaceId, kind: str
) -> None:
    """Only a regular file (or a link, kept beside its record) at a temp's name is a commit's: a
    folder or FIFO named like one is left as it is, and the workspace reads and commits."""
    folder = _committed(store, workspace)
    odd = folder / ".alpha.md.remem-tmp-0123456789abcdef"
    if kind == "fifo":
        os.mkfifo(odd)
    else:
        odd.mkdir()
        (odd / "inside").write_text("kept\n")
    base = within(lambda: store.read_workspace(workspace), odd).revision
    assert store.commit_workspace(workspace, base, [put("beta")]).status == "committed"
    assert [r.name for r in store.read_workspace(workspace).records] == ["alpha", "beta"]
    assert odd.is_dir() if kind == "folder" else stat.S_ISFIFO(odd.lstat().st_mode)


def test_a_record_swapped_for_a_fifo_after_the_check_is_refused_not_waited_on(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = _committed(store, workspace) / "beta.md"
    os.mkfifo(record)
    is_file = Path.is_file
    # The instant between the check and the open, in which a FIFO can be swapped in.
    monkeypatch.setattr(Path, "is_file", lambda path: path == record or is_file(path))
    with pytest.raises(MemoryInvalid) as refused:
        within(lambda: store.read_workspace(workspace), record)
    [file] = refused.value.files
    assert (file.path, [d.code for d in file.diagnostics]) == (str(record), ["remem/not-a-regular-file"])
    assert "FIFO" in file.diagnostics[0].message, "it names what it may be, not only a link or folder"


# -- agent-update intents and audit entries -------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_an_odd_intent_is_set_aside_not_waited_on(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    _committed(store, workspace)
    trail = AuditTrail(store.home)
    trail.folder.mkdir(parents=True, exist_ok=True)
    scope = scope_name(workspace.key)
    intent = trail.folder / f".intent-{scope}.json"
    put_odd(intent, kind, tmp_path)
    updates = AgentUpdates(store, SnapshotCache(store, watch=False))
    try:
        assert updates.pending_scopes() == [scope]
        with caplog.at_level(logging.WARNING):
            within(lambda: updates.settle(scope), intent)  # as the daemon does before it serves
        assert updates.pending_scopes() == []
    finally:
        updates.close()
    [aside] = trail.folder.glob(f".intent-{scope}.unreadable-*")
    assert stat.S_ISFIFO(aside.lstat().st_mode) if kind == "fifo" else aside.is_dir()
    assert f"{intent}: not a valid audit intent (not a regular file)" in caplog.text
    assert trail.all() == []


def test_a_fifo_audit_entry_is_named_not_waited_on(store: MemoryStore) -> None:
    trail = AuditTrail(store.home)
    trail.folder.mkdir(parents=True)
    entry = trail.path("20260101T000000000Z-0badc0de")
    os.mkfifo(entry)
    with pytest.raises(AuditError, match="not a regular file") as refused:
        within(trail.all, entry)
    assert str(entry) in str(refused.value)


# -- the memory overview: as lint reports it, never read through ----------------------------------


@pytest.mark.parametrize("kind", ["fifo", "link to an outside fifo", "link to an outside file", "folder"])
def test_the_overview_shows_an_odd_global_as_lint_does(
    home: Home, store: MemoryStore, tmp_path: Path, kind: str
) -> None:
    fifo = put_odd(home.global_file, kind, tmp_path)
    health = within(lambda: global_health(home, None), *([fifo] if fifo else []))
    assert (health.path, health.valid, health.problems) == (str(home.global_file), False, 1)
    with pytest.raises(MemoryInvalid) as refused:
        store.read_global()
    assert [d.code for d in refused.value.files[0].diagnostics] == ["remem/not-a-regular-file"]
    if kind != "folder":  # `memory validate` lists no folder as a file to validate
        [linted] = lint_paths([home.global_file])
        assert [d.code for d in linted.diagnostics] == ["remem/not-a-regular-file"]


def test_the_overview_shows_a_global_past_the_cap_as_lint_does(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    home.ensure_layout()
    home.global_file.write_text("A plain and valid Global memory line.\n")
    assert global_health(home, None).valid, "valid under the usual cap"
    monkeypatch.setattr(canonical, "MEMORY_FILE_MAX_BYTES", 16)
    [linted] = lint_paths([home.global_file])
    assert [d.code for d in linted.diagnostics] == ["remem/file-too-large"]
    health = global_health(home, None)
    assert (health.valid, health.problems) == (False, 1)


@pytest.mark.parametrize("kind", ["fifo", "link to an outside fifo", "link to an outside file", "folder"])
def test_the_overview_shows_an_odd_record_as_lint_does(
    home: Home, store: MemoryStore, workspace: WorkspaceId, tmp_path: Path, kind: str
) -> None:
    folder = _committed(store, workspace)
    record = folder / "beta.md"
    fifo = put_odd(record, kind, tmp_path)
    where, rows = within(lambda: workspace_health(home, workspace, {}), *([fifo] if fifo else []))
    assert where.folder == str(folder)
    linted = lint_workspace_folder(folder)
    assert [d.code for d in linted["beta.md"]] == ["remem/not-a-regular-file"]
    by_file = {Path(row.path).name: row for row in rows}
    beta = by_file["beta.md"]
    assert (beta.name, beta.description, beta.type) == ("beta", "", ""), "nothing read through"
    assert (beta.valid, beta.problems) == (False, len(linted["beta.md"]))
    alpha = by_file["alpha.md"]
    assert (alpha.name, alpha.description, alpha.valid) == ("alpha", "About alpha", True)


def test_the_overview_shows_a_record_past_the_cap_as_lint_does(
    home: Home, store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _committed(store, workspace)
    alpha = (folder / "alpha.md").read_text()
    (folder / "beta.md").write_text(alpha.replace("alpha", "beta") + "A longer body.\n" * 4)
    monkeypatch.setattr(canonical, "MEMORY_FILE_MAX_BYTES", len(alpha.encode()) + 8)
    linted = lint_workspace_folder(folder)
    assert [d.code for d in linted["beta.md"]] == ["remem/file-too-large"]
    _, rows = workspace_health(home, workspace, {})
    beta = next(row for row in rows if row.path.endswith("beta.md"))
    assert (beta.name, beta.description, beta.type) == ("beta", "", ""), "not read past the cap"
    assert (beta.valid, beta.problems) == (False, 1)


def test_a_linked_record_is_said_with_every_other_problem_of_its_workspace(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path
) -> None:
    """A link among the records made a read name it alone ("1 problem in 1 file"), hiding the
    others that `remem memory validate` found: the user fixed one, to be told of the next."""
    store.commit_workspace(workspace, EMPTY, [put("alpha")])
    folder = store.folder(workspace)
    (folder / "Upper.md").write_text((folder / "alpha.md").read_text().replace("alpha", "upper"))  # misnamed
    (tmp_path / "outside.md").write_text(OUTSIDE_RECORD)
    (folder / "link.md").symlink_to(tmp_path / "outside.md")
    with pytest.raises(MemoryInvalid) as caught:
        store.read_workspace(workspace)
    assert [Path(f.path).name for f in caught.value.files] == ["Upper.md", "link.md"]
