"""Memory history benchmarks: a 10-record commit with history on vs off, and a 10 000-entry log.

The commit's baseline is the very same store with history off, so the ratio is what writing
the entry adds to a commit. The log's baseline is the least work on the same repository: a
libgit2 walk reading each commit's message. Building the log's history also measures its size
on disk (10 000 generations of a 200-record workspace), printed once.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pygit2

from remem.daemon.home import Home
from remem.daemon.memory.history import CLI, RECOVERED, History, workspace_generation
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.log_cache import FOLDER
from remem.daemon.memory.record import render_record
from remem.daemon.memory.revision import workspace_revision
from remem.daemon.memory.store import MemoryStore
from remem.daemon.memory.validation import parse_record
from remem.daemon.protocol.memory import DeleteChange, PutChange
from remem.daemon.protocol.rpc import HistoryLogParams
from remem.daemon.server.memory_methods import MemoryMethods

from . import corpus
from .harness import Benchmark, Budget, Call, Contenders
from .memory import _remem_commits

_LOG_ENTRIES = 10_000
_LOG_RECORDS = 200
_LOG_BODY_BYTES = 1024


@contextmanager
def _commit_with_history() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as root:
        on = MemoryStore(Home(Path(root, "on")), defer_history=True)  # as the daemon commits
        off = MemoryStore(Home(Path(root, "off")), history=False)
        workspace = WorkspaceId.from_cwd(Path(root, "project"))
        yield Contenders(remem=_remem_commits(on, workspace), baseline=_remem_commits(off, workspace))


@contextmanager
def _log() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as root:
        home = Home(Path(root, "home"))
        workspace = WorkspaceId.from_cwd(Path(root, "project"))
        store = MemoryStore(home)
        files = _workspace_files()
        store.commit_workspace(workspace, store.read_workspace(workspace).revision, _puts(files))
        files = store.workspace_files(workspace)
        _grow(store.history, workspace.key, files)
        size = sum(p.stat().st_size for p in (home.root / "history").rglob("*") if p.is_file())
        print(
            f"history of {_LOG_ENTRIES} generations of a {_LOG_RECORDS}-record workspace: "
            f"{size / 1e6:.1f} MB on disk (target ≤ 50 MB)",
            file=sys.stderr,
            flush=True,
        )
        # The files on disk are still the first generation's: the log's look records them once.
        store.sync_history(workspace.key, RECOVERED)
        params = HistoryLogParams(cwd=workspace.cwd, stat=False)
        # One event loop for the run, as in the daemon: `asyncio.run` would format the returned
        # task, result and all, when it restores its SIGINT handler (CPython 3.11), costing more
        # than the log itself.
        loop = asyncio.new_event_loop()
        held = MemoryMethods(home)
        _print_ms(
            "first log of a fresh process, no log cache yet (every entry parsed, cache written)",
            lambda: loop.run_until_complete(held.log(params)),
        )
        cache = sum(p.stat().st_size for p in (home.root / "history" / FOLDER).iterdir())
        print(f"history.log-10000: log cache {cache / 1e6:.1f} MB", file=sys.stderr, flush=True)
        _print_ms(
            "log of a process that logged the scope before (its parsed log held)",
            lambda: loop.run_until_complete(held.log(params)),
        )
        branch = f"refs/heads/ws-{workspace.key}"

        # Each iteration is a fresh process's first log: a new store and history, nothing held
        # in memory, the log cache on disk (untimed: building them is not the log).
        def remem(iteration: int) -> Call:
            methods = MemoryMethods(home)

            def call() -> object:
                result = loop.run_until_complete(methods.log(params))
                if len(result.entries) != _LOG_ENTRIES + 2:
                    raise RuntimeError(f"logged {len(result.entries)} entries")
                return result

            return call

        def baseline(iteration: int) -> Call:
            repo = pygit2.Repository(str(home.root / "history"))
            head = repo.references[branch].target
            return lambda: [commit.message for commit in repo.walk(head)]

        try:
            yield Contenders(remem=remem, baseline=baseline)
        finally:
            loop.close()


def _print_ms(what: str, call: Callable[[], object]) -> None:
    start = time.perf_counter_ns()
    call()
    elapsed = (time.perf_counter_ns() - start) / 1e6
    print(f"history.log-10000, {what}: {elapsed:.1f} ms", file=sys.stderr, flush=True)


def _workspace_files() -> dict[str, bytes]:
    records = [
        corpus.record(f"topic-{n:03d}", corpus.markdown(_LOG_BODY_BYTES, start=n), "project")
        for n in range(_LOG_RECORDS)
    ]
    return {r.file_name: render_record(r).encode("utf-8") for r in records}


def _puts(files: dict[str, bytes]) -> list[PutChange | DeleteChange]:
    return [PutChange(action="put", record=parse_record(d.decode(), n).record) for n, d in files.items()]


def _grow(history: History, key: str, files: dict[str, bytes]) -> None:
    """Entries as the store writes them, each changing one record (no memory commit: untimed)."""
    before = workspace_generation(workspace_revision(files), files)
    names = sorted(files)
    for n in range(_LOG_ENTRIES):
        name = names[n % len(names)]
        changed = {**before.files, name: before.files[name] + f"Revision {n}.\n".encode()}
        after = workspace_generation(workspace_revision(changed), changed)
        if history.record(key, before, after, CLI) is None:
            raise RuntimeError("the history could not be written")
        before = after


BENCHMARKS = [
    Benchmark(
        name="history.commit-10-records",
        note=(
            "memory.commit-10-records with its history entry written; baseline: the same store "
            "and commits with history off"
        ),
        target=1.3,
        budget=Budget(iterations=400, warmup=20),
        setup=_commit_with_history,
    ),
    Benchmark(
        name="history.log-10000",
        note=(
            f"`memory/log` (no stat) of {_LOG_ENTRIES + 2} entries of a {_LOG_RECORDS}-record "
            "workspace, the first of a fresh process (new store, log cache on disk); baseline: a "
            "libgit2 walk of a freshly opened repository reading each commit's message. Target: "
            "remem's p50 ≤ 200 ms"
        ),
        target=None,
        budget=Budget(iterations=20, warmup=2),
        setup=_log,
    ),
]
