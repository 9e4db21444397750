"""History and revert around files as editors and people really leave them.

A save that only changes bytes the revision does not see (CRLF, a BOM, extra trailing newlines),
a record file whose name is not UTF-8, an entry an earlier remem wrote without one of its blobs,
and a revert to an entry whose file was not UTF-8: each reads, diffs, shows and reverts as
documented in docs/memory-format.md (History), and never as an internal error.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from remem.daemon.locks import try_file_lock
from remem.daemon.memory.batch import InvalidChanges
from remem.daemon.memory.history import HAND_EDIT, RECOVERED, workspace_generation
from remem.daemon.memory.history_diff import unified_diff
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.revert import changes_to
from remem.daemon.memory.revision import workspace_revision
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import PutChange, Record
from remem.daemon.server.process import Daemon, HomeLock
from remem.daemon.server.running_settings import RunningSettings
from remem.daemon.server.runtime import DaemonPaths

from .factory import put
from .test_crash_recovery import EMPTY


def run(home: Home, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home.root), "--no-daemon", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return result.exit_code, result.stdout, result.stderr


def _crlf(data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


def _bom(data: bytes) -> bytes:
    return b"\xef\xbb\xbf" + data


def _blank_lines(data: bytes) -> bytes:
    return data + b"\n\n\n"


BYTE_ONLY_SAVES: dict[str, Callable[[bytes], bytes]] = {
    "crlf": _crlf,
    "bom": _bom,
    "blank-lines": _blank_lines,
}


@pytest.mark.parametrize("save", BYTE_ONLY_SAVES.values(), ids=BYTE_ONLY_SAVES.keys())
def test_a_save_the_revision_does_not_see_leaves_every_entry_readable(
    save: Callable[[bytes], bytes], home: Home, workspace: WorkspaceId
) -> None:
    """The review's sequence: alpha and beta committed; an editor saves beta with CRLF (a BOM,
    blank lines), which keeps the revision; a commit of alpha alone. Its entry used to name a
    beta blob that was never written: log, diff, show --at and revert all failed."""
    store = MemoryStore(home)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha", "a1\n"), put("beta", "b1\n")])
    beta = store.folder(workspace) / "beta.md"
    saved = save(beta.read_bytes())
    beta.write_bytes(saved)
    assert store.read_workspace(workspace).revision == first.revision, "the save keeps the revision"
    second = store.commit_workspace(workspace, first.revision, [put("alpha", "a2\n")])
    assert second.status == "committed" and second.history is not None and first.history is not None

    code, out, _ = run(home, "memory", "log", "--cwd", workspace.cwd, "--json")
    assert code == 0
    entries = json.loads(out)["entries"]
    assert [e["id"] for e in entries] == [second.history, first.history]
    assert entries[0]["stat"]["changed"] == ["alpha", "beta"]  # beta's bytes changed, and say so
    code, out, _ = run(home, "memory", "diff", second.history)
    assert code == 0 and "-a1\n+a2\n" in out
    code, out, _ = run(home, "memory", "show", "--at", second.history, "--json")
    assert code == 0 and json.loads(out)["files"]["beta.md"] == saved.decode("utf-8")
    assert store.history.files_at(second.history)["beta.md"] == saved, "held exactly as saved"

    code, out, _ = run(home, "memory", "revert", first.history, "--json")
    assert code == 0 and json.loads(out)["status"] == "committed"
    assert {r.name: r.content for r in store.read_workspace(workspace).records} == {
        "alpha": "a1\n",
        "beta": "b1\n",
    }
    code, out, _ = run(home, "memory", "log", "--cwd", workspace.cwd)
    assert code == 0 and len(out.splitlines()) == 3


def test_a_queued_entry_is_composed_on_what_its_parent_holds(home: Home, workspace: WorkspaceId) -> None:
    """In the daemon the parent may still be queued for the writer when the next commit is
    composed on it: the blobs it holds are the queued entry's, not the files on disk."""
    store = MemoryStore(home, defer_history=True)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha", "a1\n"), put("beta", "b1\n")])
    beta = store.folder(workspace) / "beta.md"
    beta.write_bytes(_crlf(beta.read_bytes()))
    second = store.commit_workspace(workspace, first.revision, [put("alpha", "a2\n")])
    assert second.history is not None
    store.history.flush()
    reader = MemoryStore(home).history
    assert reader.files_at(second.history)["beta.md"] == beta.read_bytes()
    assert [e.id for e in reader.log(workspace.key)] == [second.history, first.history]


def _forge_entry_without_a_blob(store: MemoryStore, workspace: WorkspaceId, parent: str, before: str) -> str:
    """An entry as an earlier remem wrote it after a CRLF save of beta: its tree names the
    CRLF beta blob but only alpha's new blob was written. The memory itself moves to it too."""
    folder = store.folder(workspace)
    alpha = folder / "alpha.md"
    alpha.write_bytes(alpha.read_bytes().replace(b"a1", b"a2"))
    files = {name: (folder / name).read_bytes() for name in ("alpha.md", "beta.md")}
    repo = pygit2.Repository(str(store.history.path))
    alpha_id = repo.create_blob(files["alpha.md"])
    beta_id = hashlib.sha1(b"blob %d\0%s" % (len(files["beta.md"]), files["beta.md"])).digest()
    assert not repo.odb.exists(pygit2.Oid(raw=beta_id))
    tree = b"100644 alpha.md\0" + alpha_id.raw + b"100644 beta.md\0" + beta_id
    tree_id = repo.odb.write(pygit2.GIT_OBJECT_TREE, tree)
    after = workspace_revision(files)
    meta: dict[str, object] = {"scope": f"ws-{workspace.key}", "actor": {"kind": "cli"}}
    meta |= {"before": before, "after": after}
    meta["at"] = "2026-01-01T00:00:00.000Z"
    message = f"cli: ws-{workspace.key} at {after[:19]}\n\n{json.dumps(meta)}\n"
    signature = pygit2.Signature("remem", "remem@localhost")
    return str(
        repo.create_commit(f"refs/heads/ws-{workspace.key}", signature, signature, message, tree_id, [parent])
    )


def test_an_entry_written_without_a_blob_is_reported_and_mended(home: Home, workspace: WorkspaceId) -> None:
    store = MemoryStore(home)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha", "a1\n"), put("beta", "b1\n")])
    assert first.history is not None
    beta = store.folder(workspace) / "beta.md"
    beta.write_bytes(_crlf(beta.read_bytes()))
    damaged = _forge_entry_without_a_blob(store, workspace, first.history, first.revision)

    code, out, err = run(home, "memory", "log", "--cwd", workspace.cwd, "--json")
    assert code == 0, "the log still reads"
    entries = json.loads(out)["entries"]
    assert [e["id"] for e in entries] == [damaged, first.history]
    assert entries[0]["stat"] is None and entries[1]["stat"]["added"] == ["alpha", "beta"]
    # Given `--json`, stderr stays empty: the warning is in the home's log (decision 0509).
    assert (
        err == ""
        and f"memory history: entry {damaged[:12]} cannot be read" in DaemonPaths(home).log.read_text()
    )
    for args in (("diff", damaged), ("show", "--at", damaged), ("revert", damaged)):
        code, out, err = run(home, "memory", *args)
        assert code == 1 and "the history lacks the bytes of its file beta.md" in err, args
    code, out, _ = run(home, "memory", "diff", first.history)
    assert code == 0 and "+b1\n" in out, "the entries it does not touch read as ever"

    # The next entry holds beta's CRLF bytes still: it writes the blob the damaged entry lacks.
    current = store.read_workspace(workspace).revision
    mended = store.commit_workspace(workspace, current, [put("alpha", "a3\n")])
    assert mended.history is not None
    code, out, _ = run(home, "memory", "show", "--at", damaged, "--json")
    assert code == 0 and json.loads(out)["files"]["beta.md"] == beta.read_bytes().decode("utf-8")
    code, out, _ = run(home, "memory", "log", "--cwd", workspace.cwd, "--json")
    assert code == 0 and all(e["stat"] is not None for e in json.loads(out)["entries"])


def _hand_edited(store: MemoryStore, workspace: WorkspaceId, data: bytes) -> tuple[Path, str]:
    """`alpha` committed, then saved by hand as `data`: its file, and the entry that saw it."""
    store.commit_workspace(workspace, EMPTY, [put("alpha", "v1\n")])
    alpha = store.folder(workspace) / "alpha.md"
    alpha.write_bytes(data)
    entry = store.sync_history(workspace.key, HAND_EDIT)
    assert entry is not None
    return alpha, entry


HAND_EDIT_NOT_UTF8 = b"---\nname: alpha\ndescription: d\ntype: project\n---\ncaf\xe9 edited by hand\n"


def test_a_revert_to_a_record_that_was_not_utf8_is_refused(home: Home, workspace: WorkspaceId) -> None:
    store = MemoryStore(home)
    alpha, bad = _hand_edited(store, workspace, HAND_EDIT_NOT_UTF8)
    fixed = b"---\nname: alpha\ndescription: d\ntype: project\n---\nfixed\n"
    alpha.write_bytes(fixed)
    store.sync_history(workspace.key, HAND_EDIT)
    logged = len(store.history.log(workspace.key))

    code, out, err = run(home, "memory", "revert", bad, "--json")
    assert code == 2 and "remem/revert-invalid" in out + err and "alpha.md was not valid UTF-8" in out + err
    assert alpha.read_bytes() == fixed, "nothing written"
    assert len(store.history.log(workspace.key)) == logged, "no entry"


def test_a_stale_revert_is_a_conflict_before_what_it_puts_back_is_judged(
    home: Home, workspace: WorkspaceId
) -> None:
    """As a stale batch is a conflict whatever its records hold: exit 3, not 2."""
    store = MemoryStore(home)
    alpha, bad = _hand_edited(store, workspace, HAND_EDIT_NOT_UTF8)
    alpha.write_bytes(b"---\nname: alpha\ndescription: d\ntype: project\n---\nfixed\n")
    store.sync_history(workspace.key, HAND_EDIT)
    stale = "sha256:" + "0" * 64
    code, out, _ = run(home, "memory", "revert", bad, "--expected-revision", stale, "--json")
    assert code == 3 and json.loads(out)["status"] == "conflict", out
    code, out, err = run(home, "memory", "revert", bad, "--expected-revision", "abc", "--json")
    assert code == 2 and "remem/bad-revision" in out + err, out + err  # no revision: no conflict either
    store.replace_global(EMPTY, "first\n")
    home.global_file.write_bytes(b"caf\xe9\n")
    bad_global = store.sync_history(None, HAND_EDIT)
    assert bad_global is not None
    code, out, _ = run(home, "memory", "revert", bad_global, "--expected-revision", stale, "--json")
    assert code == 3 and json.loads(out)["status"] == "conflict", out


@pytest.mark.parametrize(
    ("edited", "said"),
    [
        (b"caf\xe9 latin-1 edited by hand\n", "GLOBAL.md was not valid UTF-8"),
        # Once refused with the entry's own problem (`remem/control-character`, "delete it"),
        # which read as if GLOBAL.md as it is now were broken.
        (b"x \x01\n", "GLOBAL.md was not valid at that entry"),
    ],
    ids=["not-utf8", "invalid"],
)
def test_a_revert_to_a_global_md_that_was_invalid_is_refused_as_of_that_entry(
    home: Home, edited: bytes, said: str
) -> None:
    store = MemoryStore(home)
    store.replace_global(EMPTY, "first\n")
    home.global_file.write_bytes(edited)
    bad = store.sync_history(None, HAND_EDIT)
    assert bad is not None
    home.global_file.write_bytes(b"fixed\n")
    store.sync_history(None, HAND_EDIT)

    code, out, err = run(home, "memory", "revert", bad, "--json")
    assert code == 2 and "remem/revert-invalid" in out + err and said in out + err
    assert "control-character" not in out + err
    assert home.global_file.read_bytes() == b"fixed\n", "nothing written"
    assert len(store.history.log(None)) == 3, "no entry"


def test_a_file_name_that_is_not_utf8_has_a_revision_of_its_bytes() -> None:
    undecodable = os.fsdecode(b"\xff.md")  # as os.listdir gives it
    files = {"alpha.md": b"a\n", undecodable: b"x"}
    digest = hashlib.sha256()
    for name, data in ((b"alpha.md", b"a\n"), (b"\xff.md", b"x\n")):
        for part in (name, data):
            digest.update(len(part).to_bytes(8, "big") + part)
    assert workspace_revision(files) == "sha256:" + digest.hexdigest()
    assert workspace_revision(files) != workspace_revision(
        {"alpha.md": b"a\n", os.fsdecode(b"\xfe.md"): b"x"}
    )


def _add_undecodable(store: MemoryStore, workspace: WorkspaceId) -> None:
    with open(os.path.join(os.fsencode(store.folder(workspace)), b"\xff.md"), "wb") as handle:
        handle.write(b"x")


def test_a_record_file_named_in_bytes_that_are_not_utf8_fails_only_its_workspace(
    home: Home, workspace: WorkspaceId, tmp_path: Path
) -> None:
    """Reads of that workspace fail with the file's problem; its log, and every other scope,
    read as ever. (It used to be a UnicodeEncodeError traceback for each.)"""
    store = MemoryStore(home)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    assert first.history is not None
    other = WorkspaceId.from_cwd(tmp_path)
    store.commit_workspace(other, EMPTY, [put("beta")])
    _add_undecodable(store, workspace)

    code, out, err = run(home, "memory", "show", "--cwd", workspace.cwd)
    assert code == 1 and "\\xff.md:1:1: error:" in err and "[remem/file-name-encoding]" in err
    code, out, _ = run(home, "memory", "validate", str(store.folder(workspace)), "--json")
    [odd] = [f for f in json.loads(out)["files"] if f["diagnostics"]]
    assert code == 1 and [d["code"] for d in odd["diagnostics"]] == ["remem/file-name-encoding"]
    code, out, _ = run(home, "memory", "log", "--cwd", workspace.cwd)
    assert code == 0 and out.splitlines()[-1].startswith(f"{first.history[:12]}  ")
    code, out, _ = run(home, "memory", "show", "--cwd", other.cwd)
    assert code == 0 and "beta" in out


def test_the_history_holds_and_shows_a_file_name_that_is_not_utf8(home: Home, workspace: WorkspaceId) -> None:
    """Should such a state be recorded (the store may refuse to read it at all), its entry
    holds the name's bytes and names it with `\\x` escapes, which JSON and a terminal can carry."""
    store = MemoryStore(home)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    assert first.history is not None
    files = {**store.workspace_files(workspace), os.fsdecode(b"\xff.md"): b"x"}
    entry = store.history.reconcile(workspace.key, workspace_generation(workspace_revision(files), files))
    assert entry is not None
    assert store.history.files_at(entry) == files
    tree = pygit2.Repository(str(store.history.path))[entry].peel(pygit2.Tree)
    assert sorted(bytes(e.raw_name or b"") for e in tree) == [b"alpha.md", b"\xff.md"]
    [newest, _] = [store.history.with_stat(e) for e in store.history.log(workspace.key)]
    assert newest.stat is not None and newest.stat.added == ["\\xff"]
    newest.model_dump_json()  # no lone surrogate left to refuse
    patch = unified_diff(store.history.files_before(entry), files, "a", "b")
    assert "+++ b/\\xff.md\n" in patch
    # No commit can name that file, so a revert that would have to delete it is refused.
    with pytest.raises(InvalidChanges) as refused:
        changes_to(files, store.history.files_at(first.history))
    [problem] = refused.value.problems
    assert (problem.code, problem.file) == ("remem/revert-invalid", "\\xff.md")
    # and one that would put it back, too: it is no valid record.
    with pytest.raises(InvalidChanges) as refused:
        changes_to(store.history.files_at(first.history), files)
    assert [p.file for p in refused.value.problems] == ["\\xff.md"]


def test_the_daemon_starts_when_one_scope_cannot_be_checked(
    home: Home, workspace: WorkspaceId, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Each scope's history is checked on start, one at a time: a workspace whose check fails
    is one warning that holds none of its content, and every other scope is still checked."""
    store = MemoryStore(home)
    store.commit_workspace(workspace, EMPTY, [put("alpha")])
    # A file name that is not UTF-8 raises no error, but the history cannot read the scope's
    # files at start, so it is said unchecked too (it was vouched for, unrecorded).
    _add_undecodable(store, workspace)
    failing = WorkspaceId.from_cwd(tmp_path)
    store.commit_workspace(failing, EMPTY, [put("beta")])
    (store.folder(failing) / "beta.md").write_text("edited while no daemon ran\n")
    home.global_file.write_text("Edited while no daemon ran.\n")

    daemon = Daemon(home, RunningSettings(home))
    checked = daemon.services.memory.store.sync_history

    def sync_history(scope: str | None, actor: object) -> str | None:
        if scope == failing.key:
            raise OSError("the secret content of beta")
        return checked(scope, RECOVERED)

    daemon.services.memory.store.sync_history = sync_history  # type: ignore[method-assign]
    paths = DaemonPaths(home)
    held = try_file_lock(paths.lock)
    assert held is not None
    lock = HomeLock(paths.lock, held)

    async def serve() -> bool:
        serving = asyncio.create_task(daemon.serve(lock))
        while paths.read_status() is None and not serving.done():
            await asyncio.sleep(0.02)
        listening = not serving.done()
        daemon.stop()
        await serving
        return listening

    try:
        with caplog.at_level(logging.WARNING, logger="remem.daemon"):
            assert asyncio.run(serve()), "the daemon listens"
    finally:
        lock.release()
    warnings = [r.getMessage() for r in caplog.records if "could not be checked" in r.getMessage()]
    assert sorted(warnings) == sorted(
        [
            f"memory history: workspace {failing.key} could not be checked at start (OSError); its history "
            "is brought up to date at its next change or `remem memory log`",
            f"memory history: workspace {workspace.key} could not be checked at start (its history could "
            "not record the state found); its history is brought up to date at its next change or "
            "`remem memory log`",
        ]
    )
    assert "secret" not in caplog.text
    history = MemoryStore(home).history
    assert [e.actor.kind for e in history.log(None)] == ["recovered"], "checked after the failure too"
    assert [e.actor.kind for e in history.log(failing.key)] == ["cli"]


HAND_EDITED = b"---\n# why: see ticket 42\ntype:   project\nname: alpha\ndescription: d\n---\nv1\n"


@pytest.mark.parametrize("body", ["v2\n", "v1\n"], ids=["other-content", "same-record-rendered"])
def test_a_revert_writes_back_a_hand_edit_as_the_entry_holds_it(
    body: str, home: Home, workspace: WorkspaceId
) -> None:
    """A hand edit's comment, key order and spacing come back, and the workspace ends at that
    entry's revision. It used to be re-rendered from its record: the comment was lost, and when
    the record rendered as the file now is, the revert was no change at all."""
    store = MemoryStore(home)
    alpha, edited = _hand_edited(store, workspace, HAND_EDITED)
    current = store.read_workspace(workspace).revision
    change = PutChange(
        action="put", record=Record(name="alpha", description="d", type="project", content=body)
    )
    assert store.commit_workspace(workspace, current, [change]).status == "committed"

    code, out, _ = run(home, "memory", "revert", edited, "--json")
    assert code == 0 and json.loads(out)["revision"] == store.history.entry(edited).after
    assert alpha.read_bytes() == HAND_EDITED
    newest = store.history.log(workspace.key)[0]
    assert newest.actor.kind == "revert" and store.history.files_at(newest.id) == {"alpha.md": HAND_EDITED}


def test_a_revert_that_recreates_a_deleted_folder_leaves_its_project_to_the_next_commit(
    home: Home, workspace: WorkspaceId, tmp_path: Path
) -> None:
    """The history does not hold the project's folder, so the revert's workspace.json names
    none; the next `apply --cwd` names it. It used to stay empty for good."""
    store = MemoryStore(home)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    assert first.history is not None
    info = store.folder(workspace) / "workspace.json"
    shutil.rmtree(store.folder(workspace))
    assert run(home, "memory", "log", "--cwd", workspace.cwd)[0] == 0

    code, out, _ = run(home, "memory", "revert", first.history, "--json")
    assert code == 0 and json.loads(out)["revision"] == first.revision
    label = json.loads(info.read_bytes())
    assert label["cwd"] == ""
    changes = tmp_path / "changes.json"
    changes.write_text(json.dumps([put("beta").model_dump()]))
    apply = [
        "apply",
        "--cwd",
        workspace.cwd,
        "--expected-revision",
        first.revision,
        "--changes",
        str(changes),
    ]
    code, out, _ = run(home, "memory", *apply)
    assert code == 0, out
    assert json.loads(info.read_bytes()) == {"cwd": workspace.cwd, "createdAt": label["createdAt"]}
    assert store.workspace_of(workspace.key) == workspace


def test_a_commit_that_changes_nothing_still_names_the_project(home: Home, workspace: WorkspaceId) -> None:
    store = MemoryStore(home)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    info = store.folder(workspace) / "workspace.json"
    created = json.loads(info.read_bytes())["createdAt"]
    info.write_text(json.dumps({"cwd": "", "createdAt": created}))
    assert store.commit_workspace(workspace, first.revision, [put("alpha")]).status == "no-change"
    assert json.loads(info.read_bytes()) == {"cwd": workspace.cwd, "createdAt": created}
