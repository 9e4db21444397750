"""A folder of a session root swapped for a link to a folder outside every root, between the
scan or lookup that found a session and the read of its file, is never read through: the read
is refused for that session, and not a byte of the outside file reaches a listing, the index, a
transcript or the turns (decision 0364).

Each test swaps at a fixed step (no timing race): the step that found the file is wrapped so
that the folder is exchanged for a link right after it, as `renameat2(RENAME_EXCHANGE)` does.
The outside file has the same name as the inside one and holds `MARKER`.
"""

from __future__ import annotations

import asyncio
import errno
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.home import Home
from remem.daemon.protocol.rpc import ListParams, RpcError, SessionParams, TranscriptParams
from remem.daemon.server.session_methods import SessionMethods
from remem.daemon.sessions import catalog as catalog_module
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.harness_sources import HARNESS_SOURCES
from remem.daemon.sessions.sources import Root

from .swaps import INSIDE, MARKER, OLD, Swappable, swap_after, swap_before, swappable


@pytest.fixture(params=["claude-code", "codex"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Swappable:
    return swappable(tmp_path, request.param)


def _catalog(home: Home, where: Swappable) -> SessionCatalog:
    return SessionCatalog(home, [Root(where.root, where.fmt)], 120)  # type: ignore[arg-type]


def _index_text(home: Home) -> str:
    """Every value the index holds, as text."""
    with sqlite3.connect(home.state / "index.sqlite") as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return "\n".join(repr(row) for table in tables for row in db.execute(f"SELECT * FROM {table}"))


@pytest.mark.parametrize("relisted", [False, True], ids=["cold listing", "relisting a changed file"])
def test_a_folder_swapped_between_the_scan_and_the_read_is_never_read(
    home: Home, harness: Swappable, monkeypatch: pytest.MonkeyPatch, relisted: bool
) -> None:
    if relisted:
        assert [s.id for s in _catalog(home, harness).listing().sessions] == [harness.session]
        os.utime(harness.file, (OLD + 10, OLD + 10))  # changed: read again by the next listing
    swap_after(monkeypatch, HARNESS_SOURCES[harness.fmt], "scan", harness)  # type: ignore[arg-type]
    listing = _catalog(home, harness).listing()
    assert MARKER not in listing.model_dump_json()
    assert MARKER not in _index_text(home)
    assert [s.id for s in listing.sessions] == []
    (error,) = listing.errors
    assert error.path == str(harness.file) and "symbolic link" in error.message, error
    # The swap undone, the file lists again: the refusal was of that moment, not kept.
    monkeypatch.undo()
    harness.undo()
    again = _catalog(home, harness).listing()
    assert ([s.id for s in again.sessions], again.errors) == ([harness.session], [])


def _methods(home: Home, where: Swappable) -> SessionMethods:
    return SessionMethods(home, extra_roots=[where.root])


def _refused(call: Any) -> RpcError:
    with pytest.raises(RpcError) as refused:
        asyncio.run(call)
    return refused.value


@pytest.mark.parametrize("fmt", ["claude-code", "codex", "dsh"])
def test_a_folder_swapped_after_the_lookup_is_not_read_for_a_transcript(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    where = swappable(tmp_path, fmt)
    methods = _methods(home, where)
    assert (
        INSIDE in asyncio.run(methods.transcript(TranscriptParams(id=where.session))).markdown or fmt == "dsh"
    )
    # A DSH log is looked up twice (the entry, then `SessionCatalog.read`): swapped after the last.
    swap_after(monkeypatch, SessionCatalog, "find", where, call=2 if fmt == "dsh" else 1)
    refused = _refused(methods.transcript(TranscriptParams(id=where.session)))
    assert refused.data == {"code": "NOT_FOUND"}, refused
    assert "symbolic link" in refused.message and MARKER not in refused.message


def test_a_folder_swapped_after_the_lookup_is_not_read_for_turns(
    home: Home, harness: Swappable, monkeypatch: pytest.MonkeyPatch
) -> None:
    methods = _methods(home, harness)
    asyncio.run(methods.listing(ListParams()))  # indexed; its turns are read when first asked for
    # Found (and checked to lie in its root) by now: swapped as its turns are read.
    swap_before(monkeypatch, catalog_module, "file_turns", harness)
    refused = _refused(methods.turns(SessionParams(id=harness.session)))
    assert refused.data == {"code": "NOT_FOUND"} and "symbolic link" in refused.message, refused
    assert MARKER not in _index_text(home)
    monkeypatch.undo()
    harness.undo()
    turns = asyncio.run(methods.turns(SessionParams(id=harness.session))).turns
    assert [t.user for t in turns] == [INSIDE]


@pytest.fixture
def linked_root(tmp_path: Path) -> Iterator[Swappable]:
    """A Claude Code root named through a link (the user may name one so)."""
    where = swappable(tmp_path, "claude-code")
    named = tmp_path / "named-projects"
    named.symlink_to(where.root, target_is_directory=True)
    yield Swappable(
        where.fmt,
        named,
        named / where.folder.name,
        named / where.folder.name / where.file.name,
        where.outside,
        where.session,
    )


def test_a_link_resolved_mid_swap_is_no_internal_error(
    home: Home, linked_root: Swappable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resolving a path (`realpath`) while a link on it is exchanged for a folder fails with
    EINVAL (`readlink` of what is no link any more): a lookup must not depend on it."""
    methods = _methods(home, linked_root)
    asyncio.run(methods.listing(ListParams()))

    def mid_swap(path: Any, *args: Any, **kwargs: Any) -> str:
        raise OSError(errno.EINVAL, "Invalid argument", os.fspath(path))

    monkeypatch.setattr(os, "readlink", mid_swap)
    markdown = asyncio.run(methods.transcript(TranscriptParams(id=linked_root.session))).markdown
    assert INSIDE in markdown
