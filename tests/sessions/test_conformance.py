"""Conformance against real DSH roots (`shared/fixtures/dsh`, outside the project).

The fixtures sit next to the repository (`<repo>/../shared/fixtures/dsh`); CI provides them.
Every fact checked here comes from `manifest.json` or from DSH's own output in the logs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.forks.service import ForkService
from remem.daemon.home import Home
from remem.daemon.protocol.forks import ForkRequest
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.lineage import build_tree
from remem.daemon.sessions.models import SessionEvent
from remem.daemon.sessions.paths import Encoding, session_log_path
from remem.daemon.sessions.projection import PROJECTED_TYPES, Projection
from remem.daemon.sessions.reader import SessionLog, read_session, skim_session
from remem.daemon.sessions.repair import interrupted_turn_closers
from remem.daemon.sessions.roots import scan_root
from remem.daemon.sessions.writer import encode_batch, json_line
from tests.shared_folder import SHARED, require

FIXTURES = SHARED / "fixtures" / "dsh"
require(FIXTURES / "manifest.json", what="the DSH fixtures")

MANIFEST: dict[str, Any] = json.loads((FIXTURES / "manifest.json").read_text())
SESSIONS: list[dict[str, Any]] = MANIFEST["sessions"]
ROOTS = {
    Encoding.RAW: FIXTURES / MANIFEST["roots"]["raw"],
    Encoding.ZSTD: FIXTURES / MANIFEST["roots"]["zstd"],
}


def _read(entry: dict[str, Any], encoding: Encoding) -> SessionLog:
    return read_session(ROOTS[encoding] / entry[f"path_{encoding.value}"])


def _records(events: tuple[SessionEvent, ...] | list[SessionEvent]) -> list[dict[str, Any]]:
    return [e.to_record() for e in events]


@pytest.mark.parametrize("encoding", list(Encoding))
def test_every_session_of_the_root_reads(encoding: Encoding) -> None:
    scan = scan_root(ROOTS[encoding])
    assert scan.errors == [] and scan.encoding is encoding
    assert sorted(log.header.id for log in scan.logs) == sorted(s["id"] for s in SESSIONS)
    assert len(scan.logs) == MANIFEST["session_count"]


@pytest.mark.parametrize("entry", SESSIONS, ids=lambda s: f"{s['fixture']}:{s['role']}:{s['id'][:13]}")
def test_session_matches_manifest(entry: dict[str, Any]) -> None:
    raw, zst = _read(entry, Encoding.RAW), _read(entry, Encoding.ZSTD)
    assert _records(raw.events) == _records(zst.events)
    assert raw.digest == zst.digest and raw.header == zst.header
    for log, encoding in ((raw, Encoding.RAW), (zst, Encoding.ZSTD)):
        assert log.path == session_log_path(ROOTS[encoding], log.header.cwd, log.header.id, encoding)
        assert log.torn is None and log.unknown_types == frozenset()
    header = raw.header
    assert (header.id, header.cwd, header.createdAt) == (entry["id"], entry["cwd"], entry["createdAt"])
    assert (header.parentSession, header.origin) == (entry["parent"], entry["origin"])
    assert (header.delegationDepth, header.seedLength) == (entry["delegationDepth"], entry["seedLength"])
    _check_turn_facts(raw, entry)
    assert zst.resume.frame_count == (2 if entry["storage_rows"] else 1)


def _check_turn_facts(log: SessionLog, entry: dict[str, Any]) -> None:
    events = log.events
    assert len(events) == entry["events"]
    assert (events[-1].seq if events else None) == (entry["last_seq"] if events else None)
    ends = [e.data["reason"]["kind"] for e in events if e.type == "turn/end"]
    assert sum(e.type == "turn/start" for e in events) == entry["turns"]
    assert ends == entry["turn_end_reasons"] and ends.count("completed") == entry["completed_turns"]
    assert bool(log.closers) == entry["has_open_turn"]
    titles = [e.data["title"] for e in events if e.type == "session/title"]
    assert (titles[-1] if titles else None) == entry["title"]


@pytest.mark.parametrize(
    "entry", [s for s in SESSIONS if s["storage_rows"]], ids=lambda s: f"{s['fixture']}:{s['id'][:13]}"
)
def test_our_encoder_packs_exactly_like_dsh(entry: dict[str, Any]) -> None:
    log = _read(entry, Encoding.RAW)
    stored = log.path.read_bytes().splitlines(keepends=True)
    ours = (json_line(log.header.to_record()) + encode_batch(log.events)).splitlines(keepends=True)
    assert stored[0] == ours[0]
    assert [json.loads(x) for x in ours] == [json.loads(x) for x in stored]


def test_repair_closers_match_the_ones_dsh_wrote() -> None:
    entry = next(s for s in SESSIONS if s["fixture"] == "headless-tool-outcome-unknown")
    events = _read(entry, Encoding.RAW).events
    turn_end = next(e.seq for e in events if e.type == "turn/end")
    first_closer = next(e.seq for e in events if e.type == "tool/result")
    closers = interrupted_turn_closers(list(events[:first_closer]))
    assert _records(closers) == _records(events[first_closer : turn_end + 1])


@pytest.mark.parametrize("entry", [s for s in SESSIONS if s["seedLength"]], ids=lambda s: s["id"][:13])
def test_seeded_children_inherit_their_parents_prefix(entry: dict[str, Any]) -> None:
    parent = next(s for s in SESSIONS if s["id"] == entry["parent"])
    child, source = _read(entry, Encoding.RAW).events, _read(parent, Encoding.RAW).events
    seed = entry["seedLength"]
    assert _records(child[:seed]) == _records(source[:seed])
    # The child constructor appends an end marker unless the seed already ends with one.
    assert child[seed].type == "session/end-seed" or child[seed - 1].type == "session/end-seed"


@pytest.mark.parametrize("encoding", list(Encoding))
def test_catalog_turns_and_tree_agree_with_the_manifest(encoding: Encoding, tmp_path: Path) -> None:
    catalog = SessionCatalog(Home(tmp_path / "home"), [ROOTS[encoding]], idle_seconds=120)
    listing = catalog.listing()
    assert listing.errors == []
    assert sorted(s.id for s in listing.sessions) == sorted(s["id"] for s in SESSIONS)
    for entry in SESSIONS:
        projection = catalog.projection(entry["id"])
        statuses = [t.status for t in projection.turns]
        assert len(statuses) == entry["turns"] and projection.title == entry["title"]
        assert [s for s in statuses if s != "open"] == entry["turn_end_reasons"]
        assert ("open" in statuses) == entry["has_open_turn"]
    for cwd in {s["cwd"] for s in SESSIONS}:
        entries, _ = catalog.entries(cwd)
        tree = build_tree(e.lineage_item() for e in entries)
        placed = {}
        for node, _depth in tree.walk():
            if node is not None:
                placed.update({child.id: node.id for child in node.children})
                assert not node.flags, f"{node.id} flagged {node.flags}"
        expected = {s["id"]: s["parent"] for s in SESSIONS if s["cwd"] == cwd and s["parent"]}
        assert placed == expected


@pytest.mark.slow
@pytest.mark.parametrize("encoding", list(Encoding))
def test_every_completed_turn_of_every_fixture_forks(encoding: Encoding, tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(ROOTS[encoding], root)  # the fixtures are read-only; forks write beside their parent
    forks = ForkService(SessionCatalog(Home(tmp_path / "home"), [root], idle_seconds=120))
    for entry in SESSIONS:
        source = read_session(root / entry[f"path_{encoding.value}"])
        for end in (e for e in source.events if e.type == "turn/end"):
            result = forks.fork(
                ForkRequest(source=entry["id"], operationId=f"{entry['id']}@{end.seq}", atSeq=end.seq)
            )
            child = read_session(
                session_log_path(root, entry["cwd"], result.child, encoding), expected_id=result.child
            )
            seed = result.seedLength
            assert _records(child.events[:seed]) == _records(source.events[:seed])
            assert child.header.parentSession == entry["id"] and child.header.seedLength == seed
    for entry in SESSIONS:
        original = (ROOTS[encoding] / entry[f"path_{encoding.value}"]).read_bytes()
        assert (root / entry[f"path_{encoding.value}"]).read_bytes() == original


@pytest.mark.parametrize("encoding", list(Encoding))
def test_a_skimming_read_of_every_fixture_lists_as_a_full_read(encoding: Encoding) -> None:
    for entry in SESSIONS:
        path = ROOTS[encoding] / entry[f"path_{encoding.value}"]
        full, skim = read_session(path), skim_session(path, PROJECTED_TYPES)
        assert (skim.header, skim.resume, skim.digest, skim.revision) == (
            full.header,
            full.resume,
            full.digest,
            full.revision,
        )
        assert [(e.type, e.seq) for e in skim.events] == [(e.type, e.seq) for e in full.events]
        assert Projection().fold(skim.events) == Projection().fold(full.events)
