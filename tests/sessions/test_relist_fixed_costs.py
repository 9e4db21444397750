"""What a catalog kept between listings reads again each time besides the logs (decision 0489).

remem's titles and archive states and DSH's archive list are read again only when their files'
stamps moved (or were too recent to prove anything when they were read): a relist after an
append reads the log's new bytes, not those files. Opens are seen through Python's audit hook,
the real `open` calls.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.metadata import SessionMetadata
from remem.daemon.sessions.writer import SessionWriter
from tests.sessions.factory import SessionSpec, build_session
from tests.sessions.stamped_reads import WATCHED, settle, watching

CWD = "/home/dev/projects/demo"


def test_a_relist_reads_titles_and_archive_lists_again_only_when_their_files_changed(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "r"
    draft = build_session(SessionSpec(seed=1, turns=3, cwd=CWD))
    writer = SessionWriter(root, draft.header)
    writer.append(draft.batches[0])
    dsh = tmp_path / "dsh-home"
    monkeypatch.setenv("DSH_HOME", str(dsh))
    registry = dsh / "storages" / "workspace.json"
    registry.parent.mkdir(parents=True)
    registry.write_text(json.dumps({"global": {"archivedSessionIds": []}}))
    catalog = SessionCatalog(home, [root], idle_seconds=120)
    metadata = SessionMetadata(home)
    metadata.update(draft.header.id, None, title="Named")
    [first] = catalog.listing().sessions
    assert first.title == "Named"
    settle(metadata.path, registry)
    # What the first listing read, it read within the racy window of the files' last change:
    # the next listing reads them again, and keeps what it read (decision 0489).
    with watching() as opened:
        catalog.listing()
    assert sorted(opened) == sorted(WATCHED)

    writer.append(draft.batches[1])
    with watching() as opened:
        [grown] = catalog.listing().sessions
    assert grown.turns == first.turns + 1 and grown.title == "Named"
    assert opened == [], "both files' settled stamps prove them unchanged"

    metadata.update(draft.header.id, None, title="Renamed")
    registry.write_text(json.dumps({"global": {"archivedSessionIds": [draft.header.id]}}))
    with watching() as opened:
        [entry], _ = catalog.entries()
    assert entry.summary.title == "Renamed" and entry.archived is True
    assert sorted(opened) == sorted(WATCHED), "their stamps moved: both are read again"
    writer.close()
