"""Fork benchmark: branching a ~50 MB session against copying its prefix bytes durably."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from remem.daemon.forks.service import ForkRequest, ForkService
from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.factory import SessionSpec, build_session, write_session
from remem.daemon.sessions.paths import Encoding

from .harness import Benchmark, Budget, Call, Contenders

_LOG_BYTES = 50_000_000


def _copy_synced(source: Path, target: Path) -> None:
    """The least a fork must do: the same bytes in a new file, fsynced, and its folder fsynced."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, source.read_bytes())
        os.fsync(fd)
    finally:
        os.close(fd)
    directory = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


@contextmanager
def _fork_big_log() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        root = Path(folder)
        draft = build_session(SessionSpec(seed=5, target_bytes=_LOG_BYTES, cwd="/home/dev/projects/bench"))
        source = write_session(root / "sessions", draft, encoding=Encoding.RAW)
        service = ForkService(SessionCatalog(Home(root / "home"), [root / "sessions"], idle_seconds=120))
        service.catalog.listing()

        def remem(iteration: int) -> Call:
            request = ForkRequest(source=draft.header.id, operationId=f"bench-{iteration}")
            return lambda: service.fork(request)

        def baseline(iteration: int) -> Call:
            return lambda: _copy_synced(source, root / "copies" / f"{iteration}.jsonl")

        yield Contenders(remem=remem, baseline=baseline)


BENCHMARKS = [
    Benchmark(
        name="forks.fork-50mb",
        note="branch after the last turn of a ~50 MB raw log (whole log inherited); baseline: "
        "copy the same bytes to a new file with fsync and a directory fsync",
        target=1.5,
        budget=Budget(iterations=5, warmup=1),
        setup=_fork_big_log,
    ),
]
