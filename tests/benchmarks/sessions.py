"""Session benchmarks: listing cold, a workspace's tree cold, re-listing after an append, projecting.

Each is measured against the parse floor (orjson decoding every line it reads), with the
earlier floors (stdlib `json` of every line, reading the bytes) kept as extra columns so the
history stays comparable. The warm listing goes through a running daemon (`daemon.py`).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.cold_reads import SPREAD, ColdReads
from remem.daemon.sessions.envelopes import union_for
from remem.daemon.sessions.lineage import build_tree
from remem.daemon.sessions.paths import Encoding
from remem.daemon.sessions.projection import PROJECTED_TYPES, Projection
from remem.daemon.sessions.reader import skim_session
from remem.daemon.sessions.writer import SessionWriter
from tests.sessions.factory import SessionSpec, build_session, write_copies, write_session

from .harness import Benchmark, Budget, Call, Contenders, Prepare, repeat

_SESSIONS = 2000
_WORKSPACE_SESSIONS = 100
_SESSION_BYTES = 100_000
BIG_LOG_BYTES = 50_000_000
_PROJECTED_EVENTS = 100_000
SPARE_BATCHES = 250  # the relist's appends: one per side and iteration, with room to spare
_CWD = "/home/dev/projects/bench"
# The rest of a corpus with a workspace in it: 19 other workspaces of 100 sessions each.
_OTHER_CWDS = tuple(f"/home/dev/projects/other-{n:02d}" for n in range(19))


def _corpus(root: Path, count: int, cwds: tuple[str, ...] = (_CWD,), first: int = 0) -> list[Path]:
    """`count` raw logs of about 100 KB under `root/corpus`, dealt over `cwds`."""
    return write_copies(root, count, cwds, first=first, target_bytes=_SESSION_BYTES)


RELIST_BUDGET = Budget(iterations=40, warmup=5)  # 5 appends an iteration: within SPARE_BATCHES
# A listing in one process: beside the spread one, what reading over the cores gains (0330).
ONE_PROCESS = ColdReads(processes=1)


def _catalog(home: Path, corpus: Path, reads: ColdReads = SPREAD) -> SessionCatalog:
    return SessionCatalog(Home(home), [corpus], idle_seconds=120, cold_reads=reads)


def _forget_index(home: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{home / 'state' / 'index.sqlite'}{suffix}").unlink(missing_ok=True)


def _read_all(paths: list[Path]) -> None:
    for path in paths:
        path.read_bytes()


def _orjson_all(paths: list[Path]) -> None:
    for path in paths:
        for line in path.read_bytes().splitlines():
            orjson.loads(line)


def _stdlib_all(paths: list[Path]) -> None:
    for path in paths:
        for line in path.read_bytes().splitlines():
            json.loads(line)


def _structs_all(paths: list[Path]) -> None:
    """One msgspec call per file decoding its event lines into the reader's line structs: the
    part of a skimming read that is in C."""
    decode = union_for(PROJECTED_TYPES).decode
    for path in paths:
        data = path.read_bytes()
        decode(memoryview(data)[data.index(b"\n") + 1 :])


def _floors(paths: list[Path]) -> tuple[Prepare, dict[str, Prepare]]:
    """The orjson floor, the older stdlib-json and read-bytes floors, and the line structs'
    decoding (`structs`), of reading `paths`."""
    others = {
        "json": repeat(lambda: _stdlib_all(paths)),
        "read": repeat(lambda: _read_all(paths)),
        "structs": repeat(lambda: _structs_all(paths)),
    }
    return repeat(lambda: _orjson_all(paths)), others


def _cold_listing(home: Path, corpus: Path, cwd: str | None = None, reads: ColdReads = SPREAD) -> Call:
    def listing() -> object:
        _forget_index(home)
        return _catalog(home, corpus, reads).listing(cwd)

    return listing


@contextmanager
def _list_cold() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        root = Path(folder)
        paths = _corpus(root, _SESSIONS)
        floor, others = _floors(paths)
        alone = repeat(_cold_listing(root / "alone", root / "corpus", reads=ONE_PROCESS))
        yield Contenders(
            remem=repeat(_cold_listing(root / "home", root / "corpus")),
            baseline=floor,
            others={**others, "one process": alone},
        )


@contextmanager
def _tree_cold() -> Iterator[Contenders]:
    """The first tree of a 100-session workspace among 2 000, against listing those 100 alone."""
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        root, alone = Path(folder, "all"), Path(folder, "alone")
        _corpus(root, _SESSIONS - _WORKSPACE_SESSIONS, _OTHER_CWDS)
        _corpus(root, _WORKSPACE_SESSIONS, first=_SESSIONS)
        mine = _corpus(alone, _WORKSPACE_SESSIONS, first=_SESSIONS)

        def tree() -> object:
            _forget_index(root / "home")
            entries, _ = _catalog(root / "home", root / "corpus").entries(_CWD)
            assert len(entries) == _WORKSPACE_SESSIONS
            return build_tree(e.lineage_item() for e in entries).flat()

        _, others = _floors(mine)
        yield Contenders(
            remem=repeat(tree),
            baseline=repeat(_cold_listing(alone / "home", alone / "corpus")),
            others={"orjson": repeat(lambda: _orjson_all(mine)), **others},
        )


def _one_commit(folder: Path, index: Path) -> Callable[[], Call]:
    """The proposed floor's durable write: one WAL transaction (set up as the session index's)
    storing a row as large as the index's row of the log; `prepare()` takes that row's bytes
    from the index, untimed, and returns the timed commit."""
    scratch = sqlite3.connect(folder / "scratch.sqlite", isolation_level=None)
    scratch.execute("PRAGMA journal_mode=WAL")
    scratch.execute("PRAGMA synchronous=NORMAL")
    scratch.execute("CREATE TABLE logs (path TEXT PRIMARY KEY, row BLOB)")

    def prepare() -> Call:
        with contextlib.closing(sqlite3.connect(index)) as db:
            columns = db.execute("SELECT * FROM logs").fetchone()
        row = "\0".join(map(str, columns)).encode()

        def commit() -> None:
            scratch.execute("BEGIN IMMEDIATE")
            scratch.execute("INSERT OR REPLACE INTO logs VALUES (?, ?)", (columns[0], row))
            scratch.execute("COMMIT")

        return commit

    return prepare


def relist_contenders(
    catalog: SessionCatalog, path: Path, append_next: Callable[[], None], folder: Path
) -> Contenders:
    """Re-listing with `catalog` after `append_next()` appended one turn to the log at `path`,
    against orjson-parsing the appended lines (extras: stdlib json, reading them, and orjson
    with one WAL commit of a row the size of the log's index row); `folder` holds the scratch
    database of that commit."""
    commit = _one_commit(folder, catalog.index.path)
    sizes: list[int] = []

    def append_then(call: Call) -> Prepare:
        def prepare(iteration: int) -> Call:
            sizes.append(path.stat().st_size)
            append_next()  # untimed: the agent's write, not remem's work
            return call

        return prepare

    def relist(iteration: int) -> Call:
        # The floors' appends since the last relist are listed first, untimed: the timed
        # relist then reads one append, as each floor parses one.
        catalog.listing()
        return append_then(catalog.listing)(iteration)

    def appended_bytes() -> bytes:
        with open(path, "rb") as handle:
            handle.seek(sizes[-1])
            return handle.read()

    def parse(loads: Callable[[bytes], object]) -> Call:
        return lambda: [loads(line) for line in appended_bytes().splitlines()]

    def parse_and_commit(iteration: int) -> Call:
        parsed, committed = append_then(parse(orjson.loads))(iteration), commit()
        return lambda: (parsed(), committed())

    # Each side is prepared (an append) before it runs, so every floor gets its own append.
    return Contenders(
        remem=relist,
        baseline=append_then(parse(orjson.loads)),
        others={
            "json": append_then(parse(json.loads)),
            "read": append_then(appended_bytes),
            "orjson+commit": parse_and_commit,
        },
    )


@contextmanager
def _relist_after_append() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        root = Path(folder)
        draft = build_session(SessionSpec(seed=2, target_bytes=BIG_LOG_BYTES, turns=400, cwd=_CWD))
        spare = draft.batches[-SPARE_BATCHES:]
        writer = SessionWriter(root / "corpus", draft.header, encoding=Encoding.RAW)
        for batch in draft.batches[:-SPARE_BATCHES]:
            writer.append(batch)
        catalog = _catalog(root / "home", root / "corpus")
        catalog.listing()
        try:
            yield relist_contenders(catalog, writer.path, lambda: writer.append(spare.pop(0)), root)
        finally:
            writer.close()


@contextmanager
def _project() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        draft = build_session(SessionSpec(seed=3, target_events=_PROJECTED_EVENTS, cwd=_CWD))
        path = write_session(Path(folder), draft, encoding=Encoding.RAW)

        def remem() -> object:
            projection = Projection()  # folded as the listing does, batch by batch, unhashed
            skim_session(path, PROJECTED_TYPES, fold=projection.fold, hashed=False)
            return projection

        floor, others = _floors([path])
        yield Contenders(remem=repeat(remem), baseline=floor, others=others)


BENCHMARKS = [
    Benchmark(
        name="sessions.list-cold",
        note=f"{_SESSIONS} raw logs of ~100 KB, empty index; baseline: orjson-parse every line",
        target=1.5,
        budget=Budget(iterations=3, warmup=1),
        setup=_list_cold,
    ),
    Benchmark(
        name="sessions.tree-cold",
        note=f"the tree of a {_WORKSPACE_SESSIONS}-session workspace among {_SESSIONS}, empty index; "
        f"baseline: a cold listing of just those {_WORKSPACE_SESSIONS} logs (target also: ≤ 1 s)",
        target=2.0,
        budget=Budget(iterations=5, warmup=1),
        setup=_tree_cold,
    ),
    Benchmark(
        name="sessions.relist-after-append",
        note="one turn appended to a ~50 MB raw log; baseline: orjson-parse the appended lines "
        "(orjson+commit: and one WAL commit of a row the size of the log's index row)",
        target=3.0,
        budget=RELIST_BUDGET,
        setup=_relist_after_append,
    ),
    Benchmark(
        name="sessions.project-100k",
        note=f"read (as a listing does) and project a {_PROJECTED_EVENTS}-event raw log; "
        "baseline: orjson-parse every line",
        target=1.5,
        budget=Budget(iterations=5, warmup=1),
        setup=_project,
    ),
]
