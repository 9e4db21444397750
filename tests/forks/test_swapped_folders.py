"""A fork whose parent's folder, or its child's, is swapped for a link to a folder outside every
root after the lookup reads nothing out there and writes nothing out there (no child, no temp
file, no folder): it is refused as what happened, and so is a child whose folder was removed.
The folders a Codex fork makes are user-only whatever the umask (decision 0364).

Each swap happens at a fixed step (no timing race), as in tests/sessions/test_swapped_folders.py.
"""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from remem.daemon.forks import claude_code_child, codex_child
from remem.daemon.forks.sources import fork_session
from remem.daemon.home import Home
from remem.daemon.protocol.forks import ForkRequest
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.errors import OperationError
from remem.daemon.sessions.sources import Root

from ..sessions.swaps import Swappable, swap_after, swappable


def _catalog(home: Home, where: Swappable) -> SessionCatalog:
    catalog = SessionCatalog(home, [Root(where.root, where.fmt)], 120)  # type: ignore[arg-type]
    assert [s.id for s in catalog.listing().sessions] == [where.session]
    return catalog


def _fork(catalog: SessionCatalog, where: Swappable, op: str = "op") -> OperationError:
    with pytest.raises(OperationError) as refused:
        fork_session(catalog, ForkRequest(source=where.session, operationId=op))
    return refused.value


def _day(root: Path, now: datetime) -> Path:
    """The date folder a Codex fork made at `now` lands in (local time, as Codex files)."""
    return root / f"{now.astimezone():%Y/%m/%d}"


def _swap_the_childs_day(monkeypatch: pytest.MonkeyPatch, where: Swappable, outside: Path) -> Swappable:
    """Have the child's date folder, made for it, swapped for a link to `outside` once its meta
    line is made: the day is the one the fork read (a fork over midnight lands in the next)."""
    original = codex_child.child_meta

    def swapping(first_meta_line: bytes, child: str, parent: str, now: datetime) -> bytes:
        meta = original(first_meta_line, child, parent, now)
        replace(where, folder=_day(where.root, now), outside=outside).swap()
        return meta

    monkeypatch.setattr(codex_child, "child_meta", swapping)
    return replace(where, outside=outside)


@pytest.mark.parametrize("fmt", ["claude-code", "codex", "dsh"])
def test_a_parent_folder_swapped_after_the_lookup_is_neither_read_nor_written_through(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    where = swappable(tmp_path, fmt)
    catalog = _catalog(home, where)
    before = where.outside_files()
    # A DSH fork looks the session up again for its projection (`indexed`): swapped after that.
    swap_after(monkeypatch, SessionCatalog, "indexed" if fmt == "dsh" else "find", where)
    refused = _fork(catalog, where)
    assert refused.code == "INVALID" and "symbolic link" in refused.message, refused.message
    assert where.outside_files() == before, "nothing written out of the root"
    assert where.marked() == [], "no byte of the outside file copied into the root"


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_a_child_folder_swapped_before_the_child_is_written_is_not_written_through(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    where = swappable(tmp_path, fmt)
    catalog = _catalog(home, where)
    # The parent is read by now, and (Codex) the child's folders made: the child's bytes are next.
    if fmt == "claude-code":
        swap_after(monkeypatch, claude_code_child, "child_lines", where)
    else:  # the child's own folder: today's, made for it (not the parent's)
        outside = tmp_path / "outside-today"
        outside.mkdir()
        where = _swap_the_childs_day(monkeypatch, where, outside)
    before = where.outside_files()
    refused = _fork(catalog, where)
    assert refused.code == "INVALID" and "symbolic link" in refused.message, refused.message
    assert where.outside_files() == before, "no child nor temp file out of the root"


def test_a_child_folder_removed_before_the_child_is_written_is_said_so(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = swappable(tmp_path, "claude-code")
    catalog = _catalog(home, where)
    original = claude_code_child.child_lines

    def removing(*args: object, **kwargs: object) -> list[bytes]:
        lines = original(*args, **kwargs)  # type: ignore[arg-type]
        where.folder.rename(where.folder.with_name("elsewhere"))
        return lines

    monkeypatch.setattr(claude_code_child, "child_lines", removing)
    refused = _fork(catalog, where)
    assert refused.code == "NOT_FOUND", refused.code  # not UNWRITABLE: no disk is full
    assert "removed or replaced" in refused.message and "Free the space" not in refused.message
    assert not where.folder.exists()


def test_the_folders_a_codex_fork_makes_are_user_only_whatever_the_umask(home: Home, tmp_path: Path) -> None:
    where = swappable(tmp_path, "codex")
    catalog = _catalog(home, where)
    folders = {p for p in where.root.rglob("*") if p.is_dir()}
    was = os.umask(0)
    try:
        done, child = fork_session(catalog, ForkRequest(source=where.session, operationId="op"))
    finally:
        os.umask(was)
    # The day the fork read, as its file's name says: a day read here is the next one after midnight.
    day = datetime.strptime(child.name.split("T")[0], "rollout-%Y-%m-%d")
    assert done.created and child.parent == where.root / f"{day:%Y/%m/%d}"
    made = {p for p in where.root.rglob("*") if p.is_dir()} - folders
    assert made, "the fork made today's date folders"
    assert {str(p): stat.S_IMODE(p.stat().st_mode) for p in made} == {str(p): 0o700 for p in made}
