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
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.harness_sources import HARNESS_SOURCES
from remem.daemon.sessions.memo import MAX_ANSWERS, ListingMemo
from remem.daemon.sessions.sources import FileScan, Root

from .claude_lines import CWD
from .harness_roots import build_roots

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
