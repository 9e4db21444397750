"""Fork benchmarks: branching a ~50 MB session against copying its prefix bytes durably, and a
fork after thousands of earlier forks against the first fork of the same session."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from remem.daemon.forks.child import child_id
from remem.daemon.forks.journal import operation_key
from remem.daemon.forks.service import ForkService
from remem.daemon.home import Home
from remem.daemon.protocol.forks import ForkRequest
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.paths import Encoding
from remem.daemon.sessions.reader import file_revision
from tests.sessions.factory import SessionSpec, build_session, write_session

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


def _forking(root: Path) -> ForkService:
    service = ForkService(SessionCatalog(Home(root / "home"), [root / "sessions"], idle_seconds=120))
    service.catalog.listing()
    return service


def _add_prior_forks(service: ForkService, source_id: str, count: int) -> None:
    """Leave on disk exactly what `count` committed forks leave: a journal entry, a lock file, a
    child log and its record in `state/published/` each. One fork is made for real; the others
    are its copies under their own operation ids (ids, paths and the child's header rewritten),
    since making ten thousand forks with their fsyncs would take minutes per run."""
    made = service.fork(ForkRequest(source=source_id, operationId="prior-0"))
    journal = service.journal
    entry = journal.get("prior-0")
    assert entry is not None and made.created
    child_bytes = Path(entry.path).read_bytes()
    for n in range(1, count):
        operation = f"prior-{n}"
        child = child_id(operation)
        path = Path(entry.path.replace(made.child, child))
        path.parent.mkdir()
        path.write_bytes(child_bytes.replace(made.child.encode(), child.encode()))
        copy = entry.model_copy(update={"operationId": operation, "child": child, "path": str(path)})
        (journal.folder / f"{operation_key(operation)}.json").write_text(
            copy.model_dump_json(indent=2) + "\n"
        )
        (journal.locks / f"fork-{operation_key(operation)}.lock").touch()
        # As `PublishedLogs.record` leaves it, without a synced write each.
        journal.published._record_path(path).write_text(file_revision(path))


def _fork_after(prior: int, listed: bool) -> Callable[[], AbstractContextManager[Contenders]]:
    """With `listed`, the prior forks are indexed too, as after the editor's tree showed them."""

    @contextmanager
    def setup() -> Iterator[Contenders]:
        with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
            draft = build_session(SessionSpec(seed=7, turns=6, cwd="/home/dev/projects/bench"))
            first, many = Path(folder) / "first", Path(folder) / "many"
            for side in (first, many):
                write_session(side / "sessions", draft, encoding=Encoding.RAW)
            fresh, grown = _forking(first), _forking(many)
            _add_prior_forks(grown, draft.header.id, prior)
            if listed:
                grown.catalog.listing()

            def side(service: ForkService) -> Callable[[int], Call]:
                def prepare(iteration: int) -> Call:
                    request = ForkRequest(source=draft.header.id, operationId=f"bench-{iteration}")
                    return lambda: service.fork(request)

                return prepare

            yield Contenders(remem=side(grown), baseline=side(fresh))

    return setup


BENCHMARKS = [
    Benchmark(
        name="forks.fork-50mb",
        note="branch after the last turn of a ~50 MB raw log (whole log inherited); baseline: "
        "copy the same bytes to a new file with fsync and a directory fsync",
        target=1.5,
        budget=Budget(iterations=5, warmup=1),
        setup=_fork_big_log,
    ),
    *(
        Benchmark(
            name=f"forks.fork-after-many-{'listed-' if listed else ''}{label}",
            note=f"fork a small raw log whose home already holds {prior} committed forks of it"
            f"{', all of them listed' if listed else ''}; baseline: the first fork of the same log "
            "in a fresh home",
            target=1.5,
            budget=Budget(iterations=40, warmup=4),
            setup=_fork_after(prior, listed),
        )
        for listed in (False, True)
        for label, prior in (("1k", 1_000), ("10k", 10_000))
    ),
]
