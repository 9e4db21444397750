"""A memory file swapped for a FIFO or a link after it was looked at is never waited on nor read.

Linting (the editor's diagnostics, `memory/overview`, `remem memory validate`) and the agent
context's snapshot cache look at a folder, then read its files: a link or a FIFO renamed over a
record in between was followed out of the home (its text shown) or waited on for good (the
language server's main thread, a daemon thread `remem daemon stop` could not stop). Here the
swap happens at the very instant between the look and the read: the first `stat` of the record
(`os.stat` or `os.lstat`, whichever the code asks) sees the regular file, then the odd one is
renamed over it. Each read then runs with a deadline (`within`), so a reader that waits fails
the test instead of hanging the suite. What a swapped file gets is what the same file gets when
it is already there when looked at.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory import snapshot_cache
from remem.daemon.memory.canonical import IRREGULAR_GLOBAL, IRREGULAR_RECORD, Unread, read_file
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.lint import lint_paths, lint_workspace_folder
from remem.daemon.memory.lint_cache import LintCache
from remem.daemon.memory.overview import workspace_health
from remem.daemon.memory.snapshot_cache import SnapshotCache
from remem.daemon.memory.store import MemoryInvalid, MemoryStore

from .factory import put
from .odd_files import put_odd, within
from .test_store import EMPTY

KINDS = ["fifo", "link to an outside fifo", "link to an outside file"]


def _committed(store: MemoryStore, workspace: WorkspaceId) -> Path:
    """The workspace's folder, holding `alpha` and `beta` and their `MEMORY.md`."""
    assert store.commit_workspace(workspace, EMPTY, [put("alpha"), put("beta")]).status == "committed"
    return store.folder(workspace)


def _staged(path: Path, kind: str, tmp_path: Path) -> tuple[Path, Path | None]:
    """The odd file of `kind` made beside `path` (to be renamed over it), and its FIFO if any."""
    staged = path.with_name(f".staged-{path.name}")
    fifo = put_odd(staged, kind, tmp_path)
    return staged, (path if fifo == staged else fifo)


def _swapped_after_stat(path: Path, staged: Path) -> AbstractContextManager[None]:
    """Rename `staged` over `path` just after the first look at it (`_after_the_look`)."""
    return _after_the_look(path, lambda: os.rename(staged, path))


@contextmanager
def _after_the_look(path: Path, act: Callable[[], None]) -> Iterator[None]:
    """`act` just after the first `stat` or `lstat` of `path` (by its full path or by its name
    from a folder's descriptor) has seen the regular file there."""
    real = {"stat": os.stat, "lstat": os.lstat}
    done: list[bool] = []

    def looked(which: str):  # type: ignore[no-untyped-def]
        def look(name, *args, **kwargs):  # type: ignore[no-untyped-def]
            st = real[which](name, *args, **kwargs)
            if not done and os.fspath(name) in (str(path), path.name):
                done.append(True)
                act()  # the instant between the look and the read
            return st

        return look

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(os, "stat", looked("stat"))
        patched.setattr(os, "lstat", looked("lstat"))
        yield
    assert done, "the swap happened"


def _codes(reports: dict[str, list]) -> dict[str, list[str]]:  # type: ignore[type-arg]
    return {name: [d.code for d in found] for name, found in sorted(reports.items())}


# -- reading one file ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_memory_file_that_is_no_regular_file_is_not_read(tmp_path: Path, kind: str) -> None:
    record = tmp_path / "beta.md"
    fifo = put_odd(record, kind, tmp_path)
    with pytest.raises(Unread) as refused:
        within(lambda: read_file(record, IRREGULAR_RECORD), *([fifo] if fifo else []))
    assert refused.value.diagnostic == IRREGULAR_RECORD


@pytest.mark.parametrize("kind", KINDS)
def test_the_lint_cache_reads_no_record_that_is_no_regular_file(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    fifo = put_odd(folder / "beta.md", kind, tmp_path)
    with pytest.raises(Unread):
        within(lambda: LintCache().read(folder, "beta.md"), *([fifo] if fifo else []))


# -- a record swapped between the listing's look and the read ------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_record_swapped_after_the_look_is_linted_as_one_found_so(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path, kind: str
) -> None:
    folder = _committed(store, workspace)
    record = folder / "beta.md"
    staged, fifo = _staged(record, kind, tmp_path)
    with _swapped_after_stat(record, staged):
        swapped = within(lambda: lint_workspace_folder(folder, cache=LintCache()), *([fifo] if fifo else []))
    found = lint_workspace_folder(folder)  # the odd file there when looked at: listed as such
    assert _codes(found)["beta.md"] == ["remem/not-a-regular-file"]
    assert swapped == found
    assert [d.message for d in swapped["beta.md"]] == [IRREGULAR_RECORD.message]


def test_a_record_deleted_after_the_look_is_linted_as_gone(
    store: MemoryStore, workspace: WorkspaceId
) -> None:
    # The read met no file and raised out of linting: the overview answered an internal error,
    # and the editor published no diagnostics for the folder.
    folder = _committed(store, workspace)
    record = folder / "beta.md"
    with _after_the_look(record, record.unlink):
        deleted = lint_workspace_folder(folder, cache=LintCache())
    assert deleted == lint_workspace_folder(folder)  # as if it was gone when looked at
    assert "beta.md" not in deleted


@pytest.mark.parametrize("kind", KINDS)
def test_the_overview_of_a_record_swapped_after_the_look_reads_nothing_through_it(
    home: Home,
    store: MemoryStore,
    workspace: WorkspaceId,
    tmp_path: Path,
    kind: str,
) -> None:
    folder = _committed(store, workspace)
    record = folder / "beta.md"
    staged, fifo = _staged(record, kind, tmp_path)
    with _swapped_after_stat(record, staged):
        _, rows = within(lambda: workspace_health(home, workspace, {}), *([fifo] if fifo else []))
    beta = next(row for row in rows if Path(row.path).name == "beta.md")
    assert (beta.name, beta.description, beta.type) == ("beta", "", ""), "nothing read through"
    assert (beta.valid, beta.problems) == (False, 1)
    assert "elsewhere" not in repr(rows)


@pytest.mark.parametrize("kind", KINDS)
def test_a_global_swapped_after_the_look_is_validated_as_one_found_so(
    home: Home, tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home.ensure_layout()
    fifo = put_odd(home.global_file, kind, tmp_path)
    # What a look at the path a moment before the read saw: a plain file, no link.
    is_file, is_symlink = Path.is_file, Path.is_symlink
    monkeypatch.setattr(Path, "is_file", lambda path: path == home.global_file or is_file(path))
    monkeypatch.setattr(Path, "is_symlink", lambda path: path != home.global_file and is_symlink(path))
    [linted] = within(lambda: lint_paths([home.global_file]), *([fifo] if fifo else []))
    assert linted.diagnostics == [IRREGULAR_GLOBAL]


# -- the agent context's snapshot cache ----------------------------------------------------------


def test_the_snapshot_digest_of_a_fifo_is_none_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "beta.md"
    os.mkfifo(fifo)
    assert within(lambda: snapshot_cache._file_digest(fifo), fifo) is None


@pytest.mark.parametrize("kind", ["fifo", "link to an outside fifo"])
def test_a_record_swapped_after_the_snapshot_look_is_refused_as_the_store_refuses_it(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path, kind: str
) -> None:
    folder = _committed(store, workspace)
    cache = SnapshotCache(store, watch=False)  # every lookup looks at the files
    try:
        assert [r.name for r in cache.workspace_snapshot(workspace).records] == ["alpha", "beta"]
        record = folder / "beta.md"
        staged, fifo = _staged(record, kind, tmp_path)
        # Just written, so the stamps cannot prove the snapshot: the bytes are hashed.
        with _swapped_after_stat(record, staged), pytest.raises(MemoryInvalid) as refused:
            within(lambda: cache.workspace_snapshot(workspace), *([fifo] if fifo else []))
    finally:
        cache.close()
    [file] = refused.value.files
    assert (file.path, file.diagnostics) == (str(record), [IRREGULAR_RECORD])
    with pytest.raises(MemoryInvalid) as found:  # as the store says it of one there when looked at
        store.read_workspace(workspace)
    assert found.value.files == refused.value.files
