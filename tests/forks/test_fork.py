"""Forks: the parent is never rewritten, a child is complete or absent, one child per operation."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from remem.daemon.faults import EXIT_CODE, POINTS
from remem.daemon.forks.child import child_id, next_title
from remem.daemon.forks.journal import ForkJournal, operation_key
from remem.daemon.forks.prefix import seed_lines
from remem.daemon.forks.service import ForkService
from remem.daemon.fsutil import TEMP_MARKER, is_temp_name
from remem.daemon.home import Home
from remem.daemon.protocol.forks import ForkRequest
from remem.daemon.sessions import scanner
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.errors import OperationError, SessionLogError
from remem.daemon.sessions.paths import Encoding, session_log_path
from remem.daemon.sessions.projection import Projection
from remem.daemon.sessions.reader import read_session
from tests.forks.points import BEFORE_PUBLISH
from tests.sessions.factory import SessionSpec, build_family, build_session, write_session

from ..sessions.logs import lines, turn_events

REPO = Path(__file__).resolve().parents[2]
CWD = "/home/dev/projects/demo"


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("session.jsonl*")
    }


def service(home: Home, root: Path) -> ForkService:
    return ForkService(SessionCatalog(home, [root], idle_seconds=120))


@pytest.fixture(params=[Encoding.RAW, Encoding.ZSTD], ids=["raw", "zstd"])
def parent(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Path, Encoding]:
    root = tmp_path / "root"
    draft = build_session(SessionSpec(seed=42, turns=5, cwd=CWD))
    return root, write_session(root, draft, encoding=request.param), request.param


def test_every_completed_turn_forks_into_a_faithful_child(
    home: Home, parent: tuple[Path, Path, Encoding]
) -> None:
    root, path, encoding = parent
    source = read_session(path)
    before = tree_digest(root)
    turns = Projection().fold(source.events).turns
    for turn in turns:
        result = service(home, root).fork(
            ForkRequest(source=source.header.id, operationId=f"op-{turn.turn}", atSeq=turn.startSeq)
        )
        child_path = session_log_path(root, CWD, result.child, encoding)
        child = read_session(child_path, expected_id=result.child)
        seed = result.seedLength
        assert result.created and result.forkTurn == turn.turn
        assert seed > turn.endSeq and (seed == len(source.events) or source.events[seed].type == "turn/start")
        assert [e.to_record() for e in child.events[:seed]] == [e.to_record() for e in source.events[:seed]]
        assert child.events[seed].type == "session/end-seed" and child.events[seed].seq == seed
        header = child.header
        assert (header.parentSession, header.seedLength, header.cwd) == (source.header.id, seed, CWD)
        assert header.origin is None and header.delegationDepth == 0
        assert header.to_record().keys() <= {"type", "version", "id", "createdAt", "cwd", "parentSession",
                                             "seedLength", "delegationDepth", "agentPreset"}  # fmt: skip
        assert child.encoding is encoding and child.torn is None and child.closers == ()
    assert {k: v for k, v in tree_digest(root).items() if k in before} == before, "the parent is unchanged"
    entries, _ = SessionCatalog(home, [root], 120).entries()
    forks = {e.summary.id: e for e in entries if e.summary.kind == "fork"}
    assert sorted(e.row.fork_turn for e in forks.values()) == [t.turn for t in turns]
    assert all(e.summary.parent == source.header.id for e in forks.values())


@pytest.mark.parametrize(
    ("parent", "child"),
    [
        ("plan", "plan (1)"),
        ("plan (9)", "plan (10)"),
        ("x" * 80, "x" * 73 + "… (1)"),  # DSH's rename would cut the counter: the parent's title
        ("x" * 77, "x" * 73 + "… (1)"),
        ("x" * 76, "x" * 76 + " (1)"),
        ("é" * 40 + " (2)", "é" * 36 + "… (3)"),  # never half a character
        ("x" * 73 + "… (1)", "x" * 73 + "… (2)"),
    ],
)
def test_a_childs_default_title_keeps_its_counter_within_dshs_80_bytes(parent: str, child: str) -> None:
    assert next_title(parent) == child and len(next_title(parent).encode()) <= 80


def test_default_anchor_title_and_forks_of_forks(home: Home, parent: tuple[Path, Path, Encoding]) -> None:
    root, path, encoding = parent
    source = read_session(path)
    first = service(home, root).fork(ForkRequest(source=source.header.id, operationId="a"))
    assert first.forkTurn == 5 and first.seedLength == len(source.events)
    again = service(home, root).fork(ForkRequest(source=first.child, operationId="b"))
    grandchild = read_session(session_log_path(root, CWD, again.child, encoding))
    titles = [e.data["title"] for e in grandchild.events if e.type == "session/title"]
    parent_title = [e.data["title"] for e in source.events if e.type == "session/title"][-1]
    assert titles[-1] == next_title(next_title(parent_title))
    assert grandchild.header.parentSession == first.child


def test_refusals(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "root"
    draft = build_session(SessionSpec(seed=8, turns=2, cwd=CWD))
    events = draft.events
    last_end = max(i for i, e in enumerate(events) if e.type == "turn/end")
    draft.batches = [events[:last_end]]  # the last turn is still open
    path = write_session(root, draft)
    source = read_session(path)
    open_start = max(e.seq for e in source.events if e.type == "turn/start")
    svc = service(home, root)
    cases = [
        (ForkRequest(source=source.header.id, operationId="x1", atSeq=open_start), "OPEN_TURN"),
        (ForkRequest(source=source.header.id, operationId="x2", atSeq=-1), "INVALID_ANCHOR"),
        (ForkRequest(source="session-missing", operationId="x3"), "NOT_FOUND"),
        (
            ForkRequest(source=source.header.id, operationId="x4", expectedRevision="1:2:3:4:5"),
            "STALE_SOURCE",
        ),
        (ForkRequest(source=source.header.id, operationId=" "), "INVALID"),
    ]
    for request, code in cases:
        with pytest.raises(OperationError) as caught:
            svc.fork(request)
        assert caught.value.code == code, caught.value.message
    ok = svc.fork(
        ForkRequest(source=source.header.id, operationId="x5", expectedRevision=source.revision, atSeq=0)
    )
    assert ok.forkTurn == 1
    assert [p.name for p in root.rglob("*") if is_temp_name(p.name)] == []


def test_same_operation_same_child_different_request_conflicts(
    home: Home, parent: tuple[Path, Path, Encoding]
) -> None:
    root, path, _ = parent
    source_id = read_session(path).header.id
    first = service(home, root).fork(ForkRequest(source=source_id, operationId="op", atSeq=0))
    retry = service(home, root).fork(ForkRequest(source=source_id, operationId="op", atSeq=0))
    assert first.created and not retry.created and retry.child == first.child == child_id("op")
    with pytest.raises(OperationError) as caught:
        service(home, root).fork(ForkRequest(source=source_id, operationId="op", atSeq=5))
    assert caught.value.code == "OP_CONFLICT"
    said = (
        f"operation 'op' already made the fork {first.child} of {source_id} after its turn {first.forkTurn}"
    )
    assert said in caught.value.message and "use a new one" in caught.value.message
    assert len(list(root.rglob("session.jsonl*"))) == 2


def run_driver(
    home: Home, root: Path, source: str, op: str, point: str = ""
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REMEM_FAULTPOINT": point}
    command = [sys.executable, "-m", "tests.forks.driver", str(home.root), str(root), source, op]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)


FORK_POINTS = sorted(p for p in POINTS if p.startswith("fork."))


@pytest.mark.slow
@pytest.mark.parametrize("point", FORK_POINTS)
def test_crash_at_every_point_then_retry_gives_one_complete_child(
    home: Home, parent: tuple[Path, Path, Encoding], point: str
) -> None:
    root, path, encoding = parent
    source_id = read_session(path).header.id
    before = tree_digest(root)
    crashed = run_driver(home, root, source_id, "op-crash", point)
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    retried = run_driver(home, root, source_id, "op-crash")
    assert retried.returncode == 0, retried.stderr
    result = json.loads(retried.stdout)
    assert result["child"] == child_id("op-crash")
    assert result["created"] is (point in BEFORE_PUBLISH)
    logs = sorted(root.rglob("session.jsonl*"))
    assert len(logs) == 2
    child = read_session(session_log_path(root, CWD, result["child"], encoding), expected_id=result["child"])
    assert child.header.seedLength == result["seedLength"] and child.torn is None
    assert [p for p in root.rglob("*") if is_temp_name(p.name)] == []
    assert {k: v for k, v in tree_digest(root).items() if k in before} == before
    assert json.loads(run_driver(home, root, source_id, "op-crash").stdout)["created"] is False


@pytest.mark.slow
def test_a_crash_between_the_childs_link_and_its_temps_unlink_leaves_no_second_name(
    home: Home, parent: tuple[Path, Path, Encoding]
) -> None:
    root, path, encoding = parent
    source_id = read_session(path).header.id
    before = tree_digest(root)
    assert run_driver(home, root, source_id, "op-link", "fork.after-link").returncode == EXIT_CODE
    child = session_log_path(root, CWD, child_id("op-link"), encoding)
    (temp,) = [p for p in child.parent.iterdir() if is_temp_name(p.name)]
    assert temp.samefile(child), "the crash left the temp as a second name of the child"
    retried = run_driver(home, root, source_id, "op-link")
    assert retried.returncode == 0, retried.stderr
    result = json.loads(retried.stdout)
    assert (result["child"], result["created"]) == (child_id("op-link"), False)
    assert not temp.exists() and child.stat().st_nlink == 1
    assert {k: v for k, v in tree_digest(root).items() if k in before} == before


@pytest.mark.slow
def test_concurrent_identical_requests_make_one_child(
    home: Home, parent: tuple[Path, Path, Encoding]
) -> None:
    root, path, _ = parent
    source_id = read_session(path).header.id
    command = [sys.executable, "-m", "tests.forks.driver", str(home.root), str(root), source_id, "op-race"]
    procs = [subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(6)]  # fmt: skip
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    assert {r["child"] for r in results} == {child_id("op-race")}
    assert sum(r["created"] for r in results) == 1
    assert len(list(root.rglob("session.jsonl*"))) == 2


@pytest.mark.slow
@pytest.mark.parametrize("point", FORK_POINTS)
def test_a_crash_is_settled_by_the_next_fork_of_another_operation(
    home: Home, parent: tuple[Path, Path, Encoding], point: str
) -> None:
    root, path, _ = parent
    source_id = read_session(path).header.id
    assert run_driver(home, root, source_id, "op-crash", point).returncode == EXIT_CODE
    other = run_driver(home, root, source_id, "op-other")
    assert other.returncode == 0, other.stderr
    journal = ForkJournal(home)
    assert [p for p in root.rglob("*") if is_temp_name(p.name)] == []
    assert [p for p in journal.folder.iterdir() if is_temp_name(p.name)] == []
    assert list(journal.pending.iterdir()) == []  # nothing is left for later forks to look at
    crashed = journal.get("op-crash")
    published = session_log_path(root, CWD, child_id("op-crash"), parent[2]).is_file()
    # Killed between the link and the unlink, the child is out but not yet recorded as this
    # home's: its entry stays prepared, for its retry to adopt after the fork's own check.
    recorded = published and point != "fork.after-link"
    assert (crashed is not None and crashed.status == "committed") is recorded


def test_settled_forks_leave_recovery_nothing_and_an_old_journal_is_scanned_once(
    home: Home, parent: tuple[Path, Path, Encoding]
) -> None:
    root, path, _ = parent
    forks = service(home, root)
    source_id = read_session(path).header.id
    for n in range(3):
        forks.fork(ForkRequest(source=source_id, operationId=f"op-{n}"))
    journal = forks.journal
    assert list(journal.pending.iterdir()) == []
    # A journal from before pending markers: a prepared entry and a torn entry temp, unmarked.
    journal.pending.rmdir()
    stale = journal.get("op-0")
    assert stale is not None
    key = operation_key("op-legacy")
    prepared = stale.model_copy(update={"status": "prepared", "operationId": "op-legacy"})
    (journal.folder / f"{key}.json").write_text(prepared.model_dump_json())
    torn = journal.folder / f".{key}.json{TEMP_MARKER}0123"
    torn.write_text("{")
    forks.fork(ForkRequest(source=source_id, operationId="op-3"))
    settled = journal.get("op-legacy")
    assert settled is not None
    assert settled.status == "committed" and not torn.exists()  # its child (op-0's) is published
    assert list(journal.pending.iterdir()) == []


def test_fork_points_are_registered() -> None:
    assert FORK_POINTS == [
        "fork.after-journal",
        "fork.after-link",
        "fork.after-mark",
        "fork.after-prepare",
        "fork.after-publish",
        "fork.after-temp-write",
    ]


def test_raw_child_seed_is_the_parents_own_lines(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "root"
    path = write_session(root, build_session(SessionSpec(seed=4, turns=4, cwd=CWD)), encoding=Encoding.RAW)
    source = read_session(path)
    result = service(home, root).fork(ForkRequest(source=source.header.id, operationId="bytes", atSeq=0))
    child = session_log_path(root, CWD, result.child, Encoding.RAW).read_bytes()
    seed_and_tail = child.partition(b"\n")[2].splitlines(keepends=True)
    seed = b"".join(seed_and_tail[:-2])  # the seed marker and the title follow the seed
    assert path.read_bytes().partition(b"\n")[2].startswith(seed) and seed.endswith(b"\n")
    assert [json.loads(line)["type"] for line in seed_and_tail[-2:]] == ["session/end-seed", "session/title"]


@pytest.mark.parametrize("encoding", [Encoding.RAW, Encoding.ZSTD], ids=["raw", "zstd"])
def test_seed_lines_are_the_parents_own_and_refused_for_a_log_that_changed(
    tmp_path: Path, encoding: Encoding
) -> None:
    path = write_session(tmp_path, build_session(SessionSpec(seed=6, turns=3, cwd=CWD)), encoding=encoding)
    log = read_session(path)
    cut = Projection().fold(log.events).turns[1].startSeq
    lines = seed_lines(path, encoding, log.revision, cut, log.resume)
    assert bytes(lines or b"") == _body_until(_plaintext(path), cut)
    assert seed_lines(path, encoding, "0:0:0:0:0", cut, log.resume) is None
    past = dataclasses.replace(log.resume, event_count=cut - 1)  # the seed holds salvaged events
    assert seed_lines(path, encoding, log.revision, cut, past) is None


def _plaintext(path: Path) -> bytes:
    data = path.read_bytes()
    if path.name == Encoding.RAW.file_name:
        return data
    return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True).read()


def _body_until(plain: bytes, seq: int | None) -> bytes:
    """The lines after the header up to the one of event `seq` (all of them for None)."""
    lines = plain.partition(b"\n")[2].splitlines(keepends=True)
    if seq is None:
        return b"".join(lines)
    start = next(i for i, line in enumerate(lines) if json.loads(line).get("seq") == seq)
    return b"".join(lines[:start])


@pytest.mark.parametrize("encoding", [Encoding.RAW, Encoding.ZSTD], ids=["raw", "zstd"])
def test_a_log_past_the_events_cap_lists_and_forks_byte_for_byte(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoding: Encoding
) -> None:
    """Listing folds a log batch by batch and a fork copies its seed's bytes, so neither holds
    every event: only a whole read (which does) is bound by `SESSION_EVENTS_MAX`."""
    root = tmp_path / "root"
    path = write_session(root, build_session(SessionSpec(seed=11, turns=6, cwd=CWD)), encoding=encoding)
    source = read_session(path)
    turns = Projection().fold(source.events).turns
    cap = len(source.events) // 3
    with monkeypatch.context() as capped:
        capped.setattr(scanner, "SESSION_EVENTS_MAX", cap)
        capped.setattr(scanner, "SINK_BATCH", cap // 4)
        with pytest.raises(SessionLogError, match=f"more than {cap} events"):
            read_session(path)
        forks = service(home, root)
        listed = {s.id: s for s in forks.catalog.listing().sessions}
        assert listed[source.header.id].turns == len(turns)
        assert listed[source.header.id].lastSeq == source.events[-1].seq
        results = [
            forks.fork(ForkRequest(source=source.header.id, operationId=f"big-{t.turn}", atSeq=t.startSeq))
            for t in turns
        ]
    for turn, result in zip(turns, results, strict=True):
        child_path = session_log_path(root, CWD, result.child, encoding)
        child = read_session(child_path, expected_id=result.child)
        seed = result.seedLength
        following = next((t.startSeq for t in turns if t.startSeq > turn.startSeq), None)
        assert seed == (following if following is not None else len(source.events))
        assert [e.to_record() for e in child.events[:seed]] == [e.to_record() for e in source.events[:seed]]
        assert [e.type for e in child.events[seed:]] == ["session/end-seed", "session/title"]
        child_body = _plaintext(child_path).partition(b"\n")[2]
        assert child_body.startswith(_body_until(_plaintext(path), following))
        assert child.encoding is encoding and child.torn is None and child.header.seedLength == seed


@pytest.mark.parametrize("encoding", [Encoding.RAW, Encoding.ZSTD], ids=["raw", "zstd"])
def test_every_turn_of_a_family_forks_including_forks_and_subagents(
    home: Home, tmp_path: Path, encoding: Encoding
) -> None:
    root = tmp_path / "root"
    family = build_family(17, cwd=CWD)
    paths = [write_session(root, draft, encoding=encoding) for draft in family.drafts]
    before = tree_digest(root)
    for path in paths:
        source = read_session(path)
        for end in (e for e in source.events if e.type == "turn/end"):
            result = service(home, root).fork(
                ForkRequest(
                    source=source.header.id, operationId=f"{source.header.id}@{end.seq}", atSeq=end.seq
                )
            )
            child = read_session(
                session_log_path(root, CWD, result.child, encoding), expected_id=result.child
            )
            seed = result.seedLength
            assert [e.to_record() for e in child.events[:seed]] == [
                e.to_record() for e in source.events[:seed]
            ]
            assert child.header.parentSession == source.header.id and child.header.origin is None
            assert result.forkTurn == end.data["turn"]
    assert {k: v for k, v in tree_digest(root).items() if k in before} == before


def test_a_child_is_not_live_until_a_harness_appends_to_it(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "root"
    source = build_session(SessionSpec(seed=9, turns=2, cwd=CWD))
    parent_path = write_session(root, source, encoding=Encoding.RAW)
    os.utime(parent_path, (1_600_000_000, 1_600_000_000))
    child = service(home, root).fork(ForkRequest(source=source.header.id, operationId="op-live")).child
    catalog = SessionCatalog(home, [root], idle_seconds=120)
    by_id = {s.id: s for s in catalog.listing().sessions}
    assert by_id[child].live is False, "remem wrote the child just now and holds no writer"
    assert by_id[source.header.id].live is False

    child_path = session_log_path(root, CWD, child, Encoding.RAW)
    with child_path.open("ab") as log:  # the harness continues the branch
        log.write(lines(turn_events(first_seq=by_id[child].lastSeq + 1, turn=by_id[child].turns + 1)))
    grown = {s.id: s for s in catalog.listing().sessions}[child]
    assert grown.turns == by_id[child].turns + 1
    assert grown.live is True, "a log written to just now by someone else may still be in use"
