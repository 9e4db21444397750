"""Memory-store benchmarks: record and GLOBAL.md validation, and a 10-record workspace commit.

Each baseline is the least work any implementation must do on the same bytes (decode and
parse, or write and fsync), so the ratio shows remem's own overhead, not the machine's speed.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from remem.daemon.home import Home
from remem.daemon.memory.diagnostics import Diagnostic
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.index import render_index
from remem.daemon.memory.record import BODY_MAX_BYTES, GLOBAL_MAX_BYTES, INDEX_FILE, RecordType, render_record
from remem.daemon.memory.store import MemoryStore
from remem.daemon.memory.validation import parse_record, validate_global
from remem.daemon.protocol.memory import DeleteChange, PutChange, Record

from . import corpus
from .harness import Benchmark, Budget, Call, Contenders, Prepare, repeat

_LOADER = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
# The characters remem's canonical-form check rejects, so the baseline scans for the same set.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_RECORD_NAME = "release-checklist"
_COMMIT_RECORDS = 10
_COMMIT_BODY_BYTES = 1024


@contextmanager
def _validate_record() -> Iterator[Contenders]:
    raw = corpus.record_file(_RECORD_NAME, BODY_MAX_BYTES).encode("utf-8")
    file_name = f"{_RECORD_NAME}.md"
    _require_clean(parse_record(raw.decode("utf-8"), file_name).diagnostics)

    def remem() -> object:
        return parse_record(raw.decode("utf-8"), file_name)

    def baseline() -> object:
        _, front, _ = raw.decode("utf-8").split("---\n", 2)
        return yaml.load(front, Loader=_LOADER)

    yield Contenders(remem=repeat(remem), baseline=repeat(baseline))


@contextmanager
def _validate_global() -> Iterator[Contenders]:
    raw = corpus.markdown(GLOBAL_MAX_BYTES).encode("utf-8")
    _require_clean(validate_global(raw.decode("utf-8")))

    def remem() -> object:
        return validate_global(raw.decode("utf-8"))

    def baseline() -> object:
        text = raw.decode("utf-8")
        return text.splitlines(), _CONTROL.findall(text)

    yield Contenders(remem=repeat(remem), baseline=repeat(baseline))


@contextmanager
def _commit_records() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as root:
        # As the daemon commits: the reply does not wait for the history entry (decision 0135).
        store = MemoryStore(Home(Path(root, "home")), defer_history=True)
        workspace = WorkspaceId.from_cwd(Path(root, "project"))
        bare = Path(root, "bare")
        bare.mkdir()
        yield Contenders(remem=_remem_commits(store, workspace), baseline=_bare_commits(bare))


def _commit_batch(iteration: int) -> list[Record]:
    """The records of one commit; their bodies change every iteration, so every commit writes."""
    kinds = list(RecordType)
    return [
        corpus.record(
            f"topic-{number:02d}",
            f"{corpus.markdown(_COMMIT_BODY_BYTES, start=number)}\nRevision {iteration}.\n",
            kinds[number % len(kinds)].value,
        )
        for number in range(_COMMIT_RECORDS)
    ]


def _remem_commits(store: MemoryStore, workspace: WorkspaceId) -> Prepare:
    revision = store.read_workspace(workspace).revision

    def prepare(iteration: int) -> Call:
        changes: list[PutChange | DeleteChange] = [
            PutChange(action="put", record=r) for r in _commit_batch(iteration)
        ]

        def commit() -> object:
            nonlocal revision
            result = store.commit_workspace(workspace, revision, changes)
            if result.status != "committed":
                raise RuntimeError(f"commit {iteration} did not write: {result.status}")
            revision = result.revision
            return result

        return commit

    return prepare


def _bare_commits(folder: Path) -> Prepare:
    def prepare(iteration: int) -> Call:
        records = _commit_batch(iteration)
        files = {r.file_name: render_record(r).encode("utf-8") for r in records}
        files[INDEX_FILE] = render_index(records).encode("utf-8")
        return lambda: _write_durably(folder, files)

    return prepare


def _write_durably(folder: Path, files: dict[str, bytes]) -> None:
    """The least I/O that makes each file's new bytes survive a power cut: write, fsync, rename."""
    for name, data in files.items():
        temp = folder / f".{name}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, folder / name)
    directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _require_clean(diagnostics: list[Diagnostic]) -> None:
    # A benchmark input with problems would time the error path, not the everyday one.
    if diagnostics:
        raise RuntimeError(f"benchmark input is not clean: {[d.code for d in diagnostics]}")


BENCHMARKS = [
    Benchmark(
        name="memory.validate-record",
        note=(
            f"baseline: decode the same bytes, split the front matter off with str.split and "
            f"parse it with yaml.{_LOADER.__name__}; remem additionally checks canonical form, "
            "every field and the body budget"
        ),
        target=2.0,
        budget=Budget(iterations=5000, warmup=500),
        setup=_validate_record,
    ),
    Benchmark(
        name="memory.validate-global",
        note=(
            "baseline: decode the same bytes, str.splitlines() and one regex scan for the "
            "control characters remem rejects (GLOBAL.md has no YAML)"
        ),
        target=2.0,
        budget=Budget(iterations=5000, warmup=500),
        setup=_validate_global,
        informational=True,
    ),
    Benchmark(
        name="memory.commit-10-records",
        note=(
            "baseline: the same 10 record files and MEMORY.md written with bare os.write + "
            "fsync + rename each, then one directory fsync"
        ),
        target=2.0,
        budget=Budget(iterations=1000, warmup=50),
        setup=_commit_records,
    ),
]
