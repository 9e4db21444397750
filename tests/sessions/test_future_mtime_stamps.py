"""An archive list whose mtime lies in the future is trusted once its ctime is settled (decision 0489).

A file's mtime is whatever a program set it to: a copy that kept its times, another machine's
clock on a synced or network disk, `touch -d`. Only its ctime says when it last changed, so a
settled ctime proves the stamp, and what a listing read of DSH's archive list is reused: by a
catalog kept between listings, and by the daemon's memo (a catalog per request). Opens are the
real `open` calls, seen through the audit hook of the fixed-costs tests.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.writer import SessionWriter
from tests.sessions.factory import SessionSpec, build_session
from tests.sessions.stamped_reads import settle, watching

AN_HOUR_AHEAD = 3600


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A root with one session, and DSH's archive list stamped an hour ahead, its ctime settled."""
    root = tmp_path / "r"
    draft = build_session(SessionSpec(seed=1, turns=3, cwd="/home/dev/projects/demo"))
    writer = SessionWriter(root, draft.header)
    writer.append(draft.batches[0])
    writer.close()
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "dsh"))
    registry = tmp_path / "dsh" / "storages" / "workspace.json"
    registry.parent.mkdir(parents=True)
    registry.write_text(json.dumps({"global": {"archivedSessionIds": []}}))
    ahead = time.time() + AN_HOUR_AHEAD
    os.utime(registry, (ahead, ahead))
    settle(registry)
    return root


def _relisted_reads(listing: Callable[[], object]) -> list[str]:
    """What the second of two listings opens of the files besides the logs."""
    listing()
    with watching() as opened:
        listing()
    return opened


def test_a_kept_catalog_reuses_a_list_whose_mtime_is_in_the_future(home: Home, root: Path) -> None:
    catalog = SessionCatalog(home, [root], idle_seconds=120)
    assert _relisted_reads(catalog.entries) == [], "a settled ctime proves the list unchanged"


def test_the_daemons_memo_reuses_its_answer_when_a_list_has_its_mtime_in_the_future(
    home: Home, root: Path
) -> None:
    shared = ListingMemo(lambda: False)

    def request() -> object:  # as the daemon lists: a catalog per request, one memo
        catalog = SessionCatalog(home, [root], idle_seconds=120, memo=shared)
        try:
            return catalog.entries()
        finally:
            catalog.close()

    assert _relisted_reads(request) == [], "the answer kept is given again, nothing read"
