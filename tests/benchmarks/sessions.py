"""Session benchmarks: listing cold and warm, re-listing after an append, projecting a log."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.factory import SessionSpec, build_session, write_session
from remem.daemon.sessions.paths import Encoding, encode_segment, project_key
from remem.daemon.sessions.projection import Projection
from remem.daemon.sessions.reader import read_session
from remem.daemon.sessions.writer import SessionWriter

from .harness import Benchmark, Budget, Call, Contenders, Prepare, repeat

_SESSIONS = 2000
_SESSION_BYTES = 100_000
_BIG_LOG_BYTES = 50_000_000
_PROJECTED_EVENTS = 100_000
_CWD = "/home/dev/projects/bench"


def _corpus(root: Path, count: int) -> list[Path]:
    """`count` raw logs of about 100 KB: one generated log, re-headed under fresh ids."""
    draft = build_session(SessionSpec(seed=1, target_bytes=_SESSION_BYTES, cwd=_CWD))
    template = write_session(root / "template", draft, encoding=Encoding.RAW)
    header, _, body = template.read_bytes().partition(b"\n")
    paths = []
    for number in range(count):
        record = {**json.loads(header), "id": f"session-bench-{number:05d}"}
        path = root / "corpus" / project_key(_CWD) / encode_segment(record["id"]) / Encoding.RAW.file_name
        path.parent.mkdir(parents=True)
        path.write_bytes(json.dumps(record, separators=(",", ":")).encode() + b"\n" + body)
        os.utime(path, (1_600_000_000, 1_600_000_000))
        paths.append(path)
    return paths


def _catalog(root: Path, corpus: Path) -> SessionCatalog:
    return SessionCatalog(Home(root / "home"), [corpus], idle_seconds=120)


def _forget_index(root: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{root / 'home' / 'state' / 'index.sqlite'}{suffix}").unlink(missing_ok=True)


def _read_all(paths: list[Path]) -> None:
    for path in paths:
        path.read_bytes()


@contextmanager
def _list_cold() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        root = Path(folder)
        paths = _corpus(root, _SESSIONS)

        def remem() -> object:
            _forget_index(root)
            return _catalog(root, root / "corpus").listing()

        yield Contenders(remem=repeat(remem), baseline=repeat(lambda: _read_all(paths)))


@contextmanager
def _list_warm() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        root = Path(folder)
        paths = _corpus(root, _SESSIONS)
        _catalog(root, root / "corpus").listing()
        yield Contenders(
            remem=repeat(lambda: _catalog(root, root / "corpus").listing()),
            baseline=repeat(lambda: [os.stat(p) for p in paths]),
        )


@contextmanager
def _relist_after_append() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        root = Path(folder)
        draft = build_session(SessionSpec(seed=2, target_bytes=_BIG_LOG_BYTES, turns=400, cwd=_CWD))
        spare = draft.batches[-200:]
        writer = SessionWriter(root / "corpus", draft.header, encoding=Encoding.RAW)
        for batch in draft.batches[:-200]:
            writer.append(batch)
        catalog = _catalog(root, root / "corpus")
        catalog.listing()
        sizes: list[int] = []

        def append_then(call: Call) -> Prepare:
            def prepare(iteration: int) -> Call:
                sizes.append(writer.path.stat().st_size)
                writer.append(spare.pop(0))  # untimed: the agent's write, not remem's work
                return call

            return prepare

        def read_appended_bytes() -> object:
            with open(writer.path, "rb") as handle:
                handle.seek(sizes[-1])
                return handle.read()

        try:
            yield Contenders(remem=append_then(catalog.listing), baseline=append_then(read_appended_bytes))
        finally:
            writer.close()


@contextmanager
def _project() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        draft = build_session(SessionSpec(seed=3, target_events=_PROJECTED_EVENTS, cwd=_CWD))
        path = write_session(Path(folder), draft, encoding=Encoding.RAW)

        def remem() -> object:
            return Projection().fold(read_session(path).events)

        def baseline() -> object:
            return [json.loads(line) for line in path.read_bytes().splitlines()]

        yield Contenders(remem=repeat(remem), baseline=repeat(baseline))


BENCHMARKS = [
    Benchmark(
        name="sessions.list-cold",
        note=f"{_SESSIONS} raw logs of ~100 KB, empty index; baseline: read every log's bytes",
        target=1.5,
        budget=Budget(iterations=3, warmup=1),
        setup=_list_cold,
    ),
    Benchmark(
        name="sessions.list-warm",
        note=f"the same {_SESSIONS} logs, index current; baseline: os.stat of every log",
        target=3.0,
        budget=Budget(iterations=20, warmup=3),
        setup=_list_warm,
    ),
    Benchmark(
        name="sessions.relist-after-append",
        note="one turn appended to a ~50 MB raw log; baseline: read just the appended bytes "
        "(target: 5x that plus a warm listing of this one log)",
        target=5.0,
        budget=Budget(iterations=60, warmup=5),
        setup=_relist_after_append,
        informational=True,
    ),
    Benchmark(
        name="sessions.project-100k",
        note=f"read and project a {_PROJECTED_EVENTS}-event raw log; baseline: json.loads of every line",
        target=2.5,
        budget=Budget(iterations=5, warmup=1),
        setup=_project,
    ),
]
