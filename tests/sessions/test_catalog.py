"""The catalog: listing through the derived index, incremental re-projection, errors, liveness."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.home import Home
from remem.daemon.sessions import cold_reads
from remem.daemon.sessions.catalog import SessionCatalog, SessionNotFound
from remem.daemon.sessions.index import LogRow, SessionIndex
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.paths import Encoding
from remem.daemon.sessions.reader import Skim, read_session
from remem.daemon.sessions.writer import SessionWriter
from tests.sessions.factory import (
    SessionSpec,
    build_family,
    build_session,
    fork_session,
    write_session,
)

from . import logs

CWD = "/home/dev/projects/demo"
OLD = 1_600_000_000  # a modification time far in the past: not live by recency


def age(path: Path) -> None:
    os.utime(path, (OLD, OLD))


@pytest.fixture(params=[Encoding.RAW, Encoding.ZSTD], ids=["raw", "zstd"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Encoding]:
    folder = tmp_path / "dsh-sessions"
    folder.mkdir()
    return folder, request.param


def _recording(reads: list[Path]) -> Callable[..., Skim]:
    """`skim_session`, noting each log it reads whole."""
    real = cold_reads.skim_session

    def skim(path: Path, *args: Any, **kwargs: Any) -> Skim:
        reads.append(path)
        return real(path, *args, **kwargs)

    return skim


def catalog(home: Home, *roots: Path) -> SessionCatalog:
    return SessionCatalog.open(home, roots)


def test_lists_a_family_with_kinds_turns_and_digests(home: Home, root: tuple[Path, Encoding]) -> None:
    folder, encoding = root
    family = build_family(7, cwd=CWD)
    paths = [write_session(folder, d, encoding=encoding) for d in family.drafts]
    for path in paths:
        age(path)
    listed = catalog(home, folder)
    listing = listed.listing()
    assert listing.errors == []
    by_id = {s.id: s for s in listing.sessions}
    main, fork, child = (by_id[d.header.id] for d in family.drafts)
    assert (main.kind, fork.kind, child.kind) == ("root", "fork", "subagent")
    assert fork.parent == main.id and child.parent == main.id
    # A listing leaves the digests for a review to take (decision 0341).
    digests = listed.digests(listed.entries()[0])
    for summary, path in zip((main, fork, child), paths, strict=True):
        log = read_session(path)
        assert summary.digest is None and digests[summary.id] == log.digest
        assert summary.lastSeq == log.events[-1].seq
        assert summary.cwd == CWD and summary.live is False
    assert main.turns == 5


def test_warm_listing_reads_no_log(
    home: Home, root: tuple[Path, Encoding], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, encoding = root
    for draft in build_family(3, cwd=CWD).drafts:
        write_session(folder, draft, encoding=encoding)
    first = catalog(home, folder).listing()
    reads: list[Path] = []
    monkeypatch.setattr(cold_reads, "skim_session", _recording(reads))
    assert catalog(home, folder).listing() == first
    assert reads == []


def test_deleting_or_damaging_the_index_loses_nothing(home: Home, root: tuple[Path, Encoding]) -> None:
    folder, encoding = root
    for draft in build_family(4, cwd=CWD).drafts:
        write_session(folder, draft, encoding=encoding)
    first = catalog(home, folder).listing()
    index = home.state / "index.sqlite"
    index.unlink()
    assert catalog(home, folder).listing() == first
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    index.write_bytes(b"this is not a database" * 100)
    assert catalog(home, folder).listing() == first


def _half_written(folder: Path, encoding: Encoding) -> tuple[SessionWriter, list[Any]]:
    """A six-turn session's writer with half its batches appended, and the other half."""
    draft = build_session(SessionSpec(seed=11, turns=6, cwd=CWD))
    writer = SessionWriter(folder, draft.header, encoding=encoding)
    half = len(draft.batches) // 2
    for batch in draft.batches[:half]:
        writer.append(batch)
    return writer, draft.batches[half:]


def test_a_grown_log_is_continued_not_reread(
    home: Home, root: tuple[Path, Encoding], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, encoding = root
    writer, rest = _half_written(folder, encoding)
    listed = catalog(home, folder)
    before = listed.listing().sessions[0]
    (reviewed,) = listed.digests(listed.entries()[0]).values()  # a review took the digest once
    reads: list[Path] = []
    monkeypatch.setattr(cold_reads, "skim_session", _recording(reads))
    for batch in rest:
        writer.append(batch)
    grown = catalog(home, folder).listing().sessions[0]
    assert reads == [], "an append is projected from the resume point"
    writer.close()
    fresh = read_session(writer.path)
    assert grown.lastSeq == fresh.events[-1].seq > before.lastSeq
    assert grown.digest == fresh.digest != reviewed, "and its digest continued, not taken again"
    assert grown.turns == 6


def test_a_reviewed_log_keeps_its_digest_as_it_grows_through_the_daemons_memo(
    home: Home, root: tuple[Path, Encoding]
) -> None:
    """Decision 0341: a listing takes no digest; a review takes it once, stores it with the
    digest state, and the relists after each append continue it, with the process's kept
    continuation (which had none) dropped."""
    folder, encoding = root
    writer, rest = _half_written(folder, encoding)
    memo = ListingMemo(lambda: False)  # polling: every listing looks at the log again

    def request() -> SessionCatalog:  # the daemon builds a catalog per request, sharing the memo
        return SessionCatalog.open(home, [folder], memo)

    first = request()
    (listed,) = first.entries()[0]
    assert listed.summary.digest is None
    writer.append(rest[0])
    assert first.digest_of(listed) is None, "the log changed since it was listed"
    (entry,) = request().entries()[0]
    assert entry.summary.digest is None, "an append continues a log without a digest without one"
    digest = request().digests([entry])[entry.summary.id]
    for batch in rest[1:]:
        writer.append(batch)
    (grown,) = request().entries()[0]
    writer.close()
    assert grown.summary.digest == read_session(writer.path).digest != digest


def test_a_digest_another_process_stored_is_continued_by_the_daemons_relists(
    home: Home, root: tuple[Path, Encoding]
) -> None:
    """A consolidation's catalog (not the daemon's) stores the digest it reviewed by; the
    daemon's kept continuation, of the same revision but without a digest, must not then
    store the grown log's row without one."""
    folder, encoding = root
    writer, rest = _half_written(folder, encoding)
    memo = ListingMemo(lambda: False)
    (listed,) = SessionCatalog.open(home, [folder], memo).entries()[0]
    elsewhere = SessionCatalog.open(home, [folder])  # the consolidation's own catalog
    (entry,) = elsewhere.entries()[0]
    log = read_session(entry.path)
    elsewhere.keep_digest(entry, log.digest, log.digest_state)
    writer.append(rest[0])
    (grown,) = SessionCatalog.open(home, [folder], memo).entries()[0]
    writer.close()
    assert grown.summary.digest == read_session(writer.path).digest != log.digest


def test_a_rewritten_log_is_read_whole(home: Home, root: tuple[Path, Encoding]) -> None:
    folder, encoding = root
    first = build_session(SessionSpec(seed=1, turns=4, cwd=CWD))
    path = write_session(folder, first, encoding=encoding)
    catalog(home, folder).listing()
    other = build_session(SessionSpec(seed=2, turns=2, cwd=CWD))
    other.header = first.header
    scratch = folder.parent / "scratch"
    replacement = write_session(scratch, other, encoding=encoding)
    shutil.copyfile(replacement, path)  # same inode, different and shorter content
    again = catalog(home, folder)
    (entry,) = again.entries()[0]
    assert entry.summary.turns == 2 and again.digests([entry]) == {
        entry.summary.id: read_session(path).digest
    }


def test_bad_logs_and_roots_are_per_path_errors(home: Home, tmp_path: Path) -> None:
    good = tmp_path / "good-root"
    family = build_family(5, cwd=CWD)
    write_session(good, family.main, encoding=Encoding.RAW)
    moved = write_session(good, family.fork, encoding=Encoding.RAW).parent
    moved.rename(moved.with_name("session-renamed"))  # its header no longer derives its path
    (good / "--flat--").mkdir()
    (good / "--flat--" / "loose.jsonl").write_text("{}\n")
    mixed = tmp_path / "mixed-root"
    raw_log = write_session(mixed, family.main, encoding=Encoding.RAW)
    # remem's writer refuses to mix encodings, so build the mixed root by hand.
    zstd_dir = write_session(tmp_path / "scratch", family.subagent, encoding=Encoding.ZSTD).parent
    zstd_dir.rename(raw_log.parent.parent / zstd_dir.name)
    listing = catalog(home, good, mixed, tmp_path / "missing").listing()
    assert [s.id for s in listing.sessions] == [family.main.header.id]
    messages = {Path(e.path).name: e.message for e in listing.errors}
    assert "belong at" in messages["session.jsonl"]
    assert "flat log" in messages["loose.jsonl"]
    assert "mixes raw and zstd" in messages["mixed-root"]
    assert messages["missing"] == "session root does not exist"


def test_a_session_whose_id_starts_with_a_dot_is_listed_like_any_other(home: Home, tmp_path: Path) -> None:
    # DSH keeps `.` in a session directory name (only the ids `.` and `..` are escaped), so the
    # session `.dotted` lives in `.dotted/` and DSH finds it there.
    folder = tmp_path / "r"
    plain = write_session(folder, build_session(SessionSpec(seed=1, turns=1, cwd=CWD)))
    dotted = write_session(folder, build_session(SessionSpec(seed=2, turns=2, cwd=CWD), session_id=".dotted"))
    assert dotted.parent.name == ".dotted"
    moved = write_session(folder, build_session(SessionSpec(seed=3, turns=1, cwd=CWD), session_id=".moved"))
    moved.parent.rename(moved.parent.with_name(".renamed"))  # its header no longer derives its path
    cat = catalog(home, folder)
    listing = cat.listing()
    assert sorted(s.id for s in listing.sessions) == sorted([".dotted", read_session(plain).header.id])
    assert [Path(e.path).parent.name for e in listing.errors] == [".renamed"]
    assert "belong at" in listing.errors[0].message
    assert cat.read(".dotted").header.id == ".dotted"


def test_duplicate_ids_are_reported_not_listed(home: Home, tmp_path: Path) -> None:
    draft = build_session(SessionSpec(seed=9, turns=1, cwd=CWD))
    one, two = tmp_path / "one", tmp_path / "two"
    write_session(one, draft)
    write_session(two, draft)
    listing = catalog(home, one, two).listing()
    assert listing.sessions == [] and len(listing.errors) == 2
    first, second = listing.errors
    for error, other in ((first, second), (second, first)):
        assert f"also exists at {other.path}: remem lists neither copy" in error.message, error.message


def test_liveness(home: Home, root: tuple[Path, Encoding]) -> None:
    folder, encoding = root
    draft = build_session(SessionSpec(seed=3, turns=3, cwd=CWD))
    path = write_session(folder, draft, encoding=encoding)
    age(path)
    assert catalog(home, folder).listing().sessions[0].live is False
    os.utime(path)  # a DSH log written just now may still be in use
    assert catalog(home, folder).listing().sessions[0].live is True

    mine = build_session(SessionSpec(seed=4, turns=1, cwd=CWD))
    writer = SessionWriter(home.sessions, mine.header, encoding=encoding)
    writer.append(mine.batches[0])
    age(writer.path)
    by_id = {s.id: s for s in catalog(home, folder).listing().sessions}
    assert by_id[mine.header.id].live is True, "remem's writer still holds writer.lock"
    writer.close()
    age(writer.path)
    by_id = {s.id: s for s in catalog(home, folder).listing().sessions}
    assert by_id[mine.header.id].live is False


def test_open_turn_is_live_and_not_forkable(home: Home, tmp_path: Path) -> None:
    draft = build_session(SessionSpec(seed=8, turns=2, cwd=CWD))
    events = draft.events
    last_end = max(i for i, e in enumerate(events) if e.type == "turn/end")
    draft.batches = [events[:last_end]]  # the second turn never ends
    path = write_session(tmp_path / "r", draft)
    age(path)
    cat = catalog(home, tmp_path / "r")
    assert cat.listing().sessions[0].live is True
    turns = cat.projection(draft.header.id).turns
    assert len(turns) == 2 and turns[0].status != "open" and turns[1].status == "open"
    assert [t.forkable for t in turns] == [True, False]


def test_workspace_filter_worker_sessions_and_lookup(home: Home, tmp_path: Path) -> None:
    folder = tmp_path / "r"
    mine = build_session(SessionSpec(seed=1, turns=1, cwd=CWD))
    elsewhere = build_session(SessionSpec(seed=2, turns=1, cwd="/home/dev/projects/other"))
    worker = build_session(SessionSpec(seed=3, turns=1, cwd=str(home.memory / "consolidator-workspace")))
    for draft in (mine, elsewhere, worker):
        write_session(folder, draft)
    cat = catalog(home, folder)
    assert [s.id for s in cat.listing(CWD).sessions] == [mine.header.id]
    assert worker.header.id not in {s.id for s in cat.listing().sessions}
    with pytest.raises(SessionNotFound):
        cat.find(worker.header.id)
    assert cat.read(mine.header.id).header.id == mine.header.id


def test_fork_turn_of_a_child(home: Home, tmp_path: Path) -> None:
    parent = build_session(SessionSpec(seed=5, turns=4, cwd=CWD))
    child = fork_session(parent, SessionSpec(seed=6, turns=1, cwd=CWD), after_turn=3)
    folder = tmp_path / "r"
    write_session(folder, parent)
    write_session(folder, child)
    entries, _ = catalog(home, folder).entries()
    assert {e.summary.id: e.row.fork_turn for e in entries} == {parent.header.id: None, child.header.id: 3}


def test_hostile_logs_never_break_a_listing(home: Home, tmp_path: Path) -> None:
    raw_root, zstd_root = tmp_path / "raw", tmp_path / "zstd"
    draft = build_session(SessionSpec(seed=1, turns=2, cwd=logs.CWD), session_id="session-good")
    good = write_session(raw_root, draft, encoding=Encoding.RAW)
    body = b"".join(logs.factory_batches())
    events = body.splitlines(keepends=True)
    hostile = {
        "bad-utf8": events[0] + b'{"type":"x","seq":1,"time":1,"data":"\xff"}\n' + b"".join(events[1:]),
        "seq-gap": events[0] + b"".join(events[2:]),
        "not-json": events[0] + b"{oops\n" + b"".join(events[1:]),
    }
    for name, data in hostile.items():
        logs.raw_log(raw_root, data, session_id=f"session-{name}")
    logs.place(raw_root, "a/../b", logs.line(logs.header("a/../b")))
    misplaced = logs.raw_log(raw_root, events[0], session_id="session-moved")
    misplaced.parent.rename(misplaced.parent.with_name("session-elsewhere"))
    frames = logs.factory_batches()
    logs.zstd_log(zstd_root, frames, session_id="s1")
    damaged = logs.zstd_log(zstd_root, frames, session_id="s2")
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside a complete frame: checksum or decode failure
    damaged.write_bytes(bytes(data))
    truncated = logs.zstd_log(zstd_root, frames, session_id="s3")
    truncated.write_bytes(truncated.read_bytes()[:-7])  # a torn last frame is crash damage, not corruption

    listing = catalog(home, raw_root, zstd_root).listing()
    listed = {s.id for s in listing.sessions}
    failed = {Path(e.path).parent.name for e in listing.errors}
    assert good.parent.name in listed
    assert "a/../b" in listed, "an id with / and .. is just an id: its directory is escaped"
    assert catalog(home, raw_root).find("a/../b").path.parent.name == "a~002F..~002Fb"
    assert {"session-bad-utf8", "session-seq-gap", "session-not-json", "session-elsewhere", "s2"} <= failed
    assert {"s1", "s3"} <= listed, "readable logs, including a crash-torn one, are still listed"
    assert all(e.message for e in listing.errors)


def test_find_refreshes_only_the_session_it_looks_up(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, other_root = tmp_path / "r", tmp_path / "other"
    known = build_session(SessionSpec(seed=1, turns=2, cwd=CWD))
    write_session(folder, known)
    elsewhere = build_session(SessionSpec(seed=3, turns=1, cwd=CWD))
    write_session(other_root, elsewhere)
    catalog(home, folder, other_root).listing()
    write_session(folder, build_session(SessionSpec(seed=2, turns=2, cwd=CWD)))  # not indexed yet
    reads: list[Path] = []
    monkeypatch.setattr(cold_reads, "skim_session", _recording(reads))
    assert catalog(home, folder).find(known.header.id).summary.id == known.header.id
    assert reads == [], "the new log is indexed by the next listing, not by a lookup"
    with pytest.raises(SessionNotFound):
        catalog(home, folder).find(elsewhere.header.id)  # indexed, but its root is not configured now


def test_find_loads_only_the_rows_of_the_session_it_looks_up(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork looks its source up by id: with thousands of forks indexed beside it, loading
    every row made each fork slower than the last (#20 item 7)."""
    folder = tmp_path / "r"
    sessions = [build_session(SessionSpec(seed=seed, turns=1, cwd=CWD)) for seed in range(1, 6)]
    for session in sessions:
        write_session(folder, session)
    catalog(home, folder).listing()
    loaded: list[int] = []
    rows_of = SessionIndex.rows_of

    def counted(index: SessionIndex, session_id: str) -> list[LogRow]:
        found = rows_of(index, session_id)
        loaded.append(len(found))
        return found

    monkeypatch.setattr(SessionIndex, "rows", lambda _: pytest.fail("every row loaded for one lookup"))
    monkeypatch.setattr(SessionIndex, "rows_of", counted)
    for session in sessions:
        assert catalog(home, folder).find(session.header.id).summary.id == session.header.id
    assert loaded == [1] * len(sessions)


def test_listing_other_roots_keeps_their_index_rows(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    write_session(one, build_session(SessionSpec(seed=1, turns=1, cwd=CWD)))
    gone = write_session(two, build_session(SessionSpec(seed=2, turns=1, cwd=CWD)))
    catalog(home, one, two).listing()
    catalog(home, one).listing()
    reads: list[Path] = []
    monkeypatch.setattr(cold_reads, "skim_session", _recording(reads))
    assert len(catalog(home, one, two).listing().sessions) == 2 and reads == []
    shutil.rmtree(gone.parent)
    assert len(catalog(home, one, two).listing().sessions) == 1
    assert str(gone) not in catalog(home, one).index.rows(), "a log that disappeared is forgotten"


def test_a_workspace_listing_reads_only_its_project_directories(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    mine = [build_session(SessionSpec(seed=s, turns=1, cwd=CWD)) for s in (1, 2)]
    others = [build_session(SessionSpec(seed=s, turns=1, cwd=f"/home/dev/p{s}")) for s in (3, 4)]
    # A project key is not injective: this cwd shares the workspace's project directory.
    twin = build_session(SessionSpec(seed=5, turns=1, cwd=CWD.replace("/demo", ":demo")))
    write_session(one, mine[0])
    write_session(two, mine[1])
    for draft in (*others, twin):
        write_session(one, draft)
    (one / "--home-dev-p9--" / "broken").mkdir(parents=True)
    (one / "--home-dev-p9--" / "broken" / "session.jsonl.zstd").write_bytes(b"not a log\n")
    reads: list[Path] = []
    monkeypatch.setattr(cold_reads, "skim_session", _recording(reads))

    cat = catalog(home, one, two)
    entries, errors = cat.entries(CWD)
    assert sorted(e.summary.id for e in entries) == sorted(d.header.id for d in mine)
    assert errors == [], "a damaged log of another project is not this workspace's concern"
    assert sorted(p.parent.parent.name for p in reads) == ["--home-dev-projects-demo--"] * 3

    reads.clear()
    listing = cat.listing()
    assert len(listing.sessions) == 5 and [e.path for e in listing.errors] == [
        str(one / "--home-dev-p9--" / "broken" / "session.jsonl.zstd")
    ]
    assert len(reads) == 3, "the full listing reads what the workspace listing had not"


def test_a_workspace_listing_keeps_other_projects_index_rows(home: Home, tmp_path: Path) -> None:
    folder = tmp_path / "r"
    mine = build_session(SessionSpec(seed=1, turns=1, cwd=CWD))
    other = build_session(SessionSpec(seed=2, turns=1, cwd="/home/dev/projects/other"))
    gone = write_session(folder, mine)
    kept = write_session(folder, other)
    cat = catalog(home, folder)
    cat.listing()
    shutil.rmtree(gone.parent)
    assert cat.entries(CWD)[0] == []
    rows = cat.index.rows()
    assert str(gone) not in rows and str(kept) in rows


def test_a_fork_whose_parent_is_in_another_project_is_an_orphan_that_still_resolves(
    home: Home, tmp_path: Path
) -> None:
    folder = tmp_path / "r"
    parent = build_session(SessionSpec(seed=5, turns=3, cwd="/home/dev/projects/other"))
    write_session(folder, parent)
    child = build_session(SessionSpec(seed=6, turns=1, cwd=CWD))
    child.header = child.header.model_copy(update={"parentSession": parent.header.id})
    write_session(folder, child)
    cat = catalog(home, folder)
    entries, _ = cat.entries(CWD)
    assert [e.summary.id for e in entries] == [child.header.id]
    assert entries[0].summary.parent == parent.header.id
    assert cat.find(parent.header.id).summary.cwd == "/home/dev/projects/other"


def test_a_mixed_project_directory_refuses_the_root_for_the_workspace(home: Home, tmp_path: Path) -> None:
    folder = tmp_path / "r"
    write_session(folder, build_session(SessionSpec(seed=1, turns=1, cwd=CWD)), encoding=Encoding.RAW)
    zstd = write_session(tmp_path / "z", build_session(SessionSpec(seed=2, turns=1, cwd=CWD)))
    shutil.move(zstd.parent, folder / zstd.parent.parent.name / zstd.parent.name)
    entries, errors = catalog(home, folder).entries(CWD)
    assert entries == [] and [e.path for e in errors] == [str(folder)]
    assert "mixes raw and zstd" in errors[0].message


def test_a_listing_reports_its_progress_over_the_logs_it_reads(home: Home, tmp_path: Path) -> None:
    folder = tmp_path / "r"
    for seed in (1, 2, 3):
        write_session(folder, build_session(SessionSpec(seed=seed, turns=1, cwd=CWD)))
    heard: list[tuple[int, int]] = []
    catalog(home, folder).listing(progress=lambda done, total: heard.append((done, total)))
    assert heard == [(1, 3), (2, 3), (3, 3)]
    heard.clear()
    write_session(folder, build_session(SessionSpec(seed=4, turns=1, cwd=CWD)))
    catalog(home, folder).listing(progress=lambda done, total: heard.append((done, total)))
    assert heard == [(1, 1)], "only what must be read counts"
