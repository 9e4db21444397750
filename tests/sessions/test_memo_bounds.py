"""What the listing memo keeps is bounded by what is on disk, not by the workspaces asked about.

An editor, an agent or the CLI may ask a long-lived daemon about any number of workspaces; a
scan kept per workspace for ever, or a scan of a project folder that does not exist, would grow
the daemon with each. Every listing still shows what a fresh read shows.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.sessions import catalog as catalog_module
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.harness_sources import HARNESS_SOURCES, file_turns
from remem.daemon.sessions.memo import MAX_ANSWERS, MAX_LIVE_TURNS, ListingMemo
from remem.daemon.sessions.sources import FileScan, Root

from .claude_lines import CWD, jsonl, prompt, say
from .harness_roots import build_roots, claude_project

WORKSPACES = 2 * MAX_ANSWERS + 5


def _catalog(home: Home, roots: dict[str, Path], memo: ListingMemo | None) -> SessionCatalog:
    return SessionCatalog(home, [Root(p, fmt) for fmt, p in roots.items()], 120, memo)  # type: ignore[arg-type]


def _listed(home: Home, roots: dict[str, Path], memo: ListingMemo | None, cwd: str | None) -> object:
    listing = _catalog(home, roots, memo).listing(cwd)
    return sorted((s.id, s.turns) for s in listing.sessions), sorted(e.path for e in listing.errors)


def test_many_workspaces_asked_about_keep_a_bounded_memo(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    roots = build_roots(tmp_path)  # a Claude Code, a Codex and a DSH root
    # No session of any root, no folder of their own.
    workspaces = [None, *(f"/home/dev/elsewhere/ws{n}" for n in range(WORKSPACES)), CWD]
    fresh = {cwd: _listed(home, roots, None, cwd) for cwd in workspaces}  # read anew, no memo
    memo = ListingMemo(lambda: True)
    scanned: Counter[str] = Counter()
    for fmt, source in HARNESS_SOURCES.items():
        original = source.scan

        def counted(root: Path, cwd: str | None, original=original, fmt=fmt) -> FileScan:  # type: ignore[no-untyped-def]
            scanned[fmt] += 1
            return original(root, cwd)

        monkeypatch.setattr(source, "scan", counted)
    for cwd in workspaces[:-1]:
        assert _listed(home, roots, memo, cwd) == fresh[cwd]
    # Codex's scan is the same for any workspace (rollouts lie by date): the first serves all.
    assert scanned["codex"] == 1, "the Codex root was scanned once"
    held = Counter(root for root, _ in memo._harness)
    assert held[str(roots["codex"])] == 1
    assert held[str(roots["claude-code"])] == MAX_ANSWERS, (
        "a Claude Code root keeps its last workspaces, as many as answers"
    )
    dsh = memo._roots[str(roots["dsh"])]
    assert set(dsh.projects) == set(os.listdir(roots["dsh"])), "no scan kept of a folder that is not there"

    # The workspace listed first (the whole listing) lost its scan to the later ones: it is
    # scanned again, as is one never listed, and both list as a fresh read does.
    scanned.clear()
    assert _listed(home, roots, memo, None) == fresh[None]
    assert _listed(home, roots, memo, CWD) == fresh[CWD]
    assert scanned == Counter({"claude-code": 2})
    assert Counter(root for root, _ in memo._harness)[str(roots["claude-code"])] == MAX_ANSWERS


def test_the_daemon_keeps_the_turns_of_its_last_few_live_claude_code_files(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live file's turns are kept for every request (the daemon's catalog is one per request),
    but only the last `MAX_LIVE_TURNS` files': a daemon asked about every session it lists must
    not hold all their turns."""
    root = tmp_path / "claude" / "projects"
    ids = [f"{n:08d}-0000-4000-8000-000000000000" for n in range(MAX_LIVE_TURNS + 1)]
    for sid in ids:  # written now: live for the hour the catalog's `idle_seconds` gives
        lines = [{**r, "sessionId": sid} for r in (prompt("u1", None, sid), say("a1", "u1", "ok"))]
        (claude_project(root) / f"{sid}.jsonl").write_bytes(jsonl(*lines))
    read: list[str] = []

    def counted(fmt: str, path: Path, **kwargs: object) -> object:
        read.append(path.stem)
        return file_turns(fmt, path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(catalog_module, "file_turns", counted)
    memo = ListingMemo(lambda: True)

    def asked(sid: str) -> str:
        catalog = SessionCatalog(home, [Root(root, "claude-code")], 3600, memo)  # as one request
        try:
            (turn,) = catalog.projection(sid).turns
        finally:
            catalog.close()
        return turn.user

    assert [asked(sid) for sid in ids] == ids and read == ids
    assert [asked(sid) for sid in reversed(ids[1:])] == ids[:0:-1] and read == ids, "all kept"
    assert asked(ids[0]) == ids[0] and read == [*ids, ids[0]], "the least recently asked went"
