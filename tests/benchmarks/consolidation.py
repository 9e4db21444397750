"""Consolidation benchmarks: one whole review of a ~1 MB session, and the evidence projection.

The model is the project's fake OpenAI server on loopback, answering at once with a valid
final proposal, so what remains of a review's time is the host's own work around one model
round trip. The fake server, the `openai` client (inside the one `Consolidator`) and the event
loop live for the whole benchmark, as they do in a daemon.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from remem.daemon.consolidation.evidence import project_evidence
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.consolidation.worker_log import worker_cwd
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.paths import Encoding, encode_segment, project_key
from remem.daemon.sessions.reader import read_session
from tests.consolidation.conftest import KEY_ENV, configure, proposal, put
from tests.fake_openai import FakeOpenAI, tool_call
from tests.sessions.factory import SessionSpec, build_session, write_session

from .harness import Benchmark, Budget, Call, Contenders, _format_ns, percentile, render_lines, repeat
from .sessions import _CWD, _PROJECTED_EVENTS

_SESSION_BYTES = 1_000_000
_OVERHEAD_TARGET_NS = 50_000_000
_KEY = "sk-bench"
_OLD = 1_600_000_000  # an mtime long past, so every copy is finished, not live
_RECORD = "bench-note"


@contextmanager
def _environment(**values: str) -> Iterator[None]:
    """Set environment variables for the benchmark's duration, then put the old values back."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class _Copies:
    """Fresh sessions under new ids: one raw log, re-headed once per iteration (untimed).

    A new id is a new review (a successful one is returned without work on a repeat). Each
    copy replaces the one before it, the worker sessions of earlier reviews go too, and the
    copy is indexed before its iteration, as a session picked from a listing is: every review
    lists the same logs (a review lists every session root three times).
    """

    def __init__(self, home: Home, root: Path, template: Path) -> None:
        self.home, self.root = home, root
        header, _, self.body = template.read_bytes().partition(b"\n")
        self.header = json.loads(header)
        self.current: tuple[int, str, Path] | None = None

    def of(self, iteration: int) -> tuple[str, Path]:
        if self.current is not None and self.current[0] == iteration:
            return self.current[1:]
        if self.current is not None:
            shutil.rmtree(self.current[2].parent)
            shutil.rmtree(self.home.sessions / project_key(worker_cwd(self.home)))
        record = {**self.header, "id": f"session-review-{iteration:05d}"}
        path = self.root / project_key(_CWD) / encode_segment(record["id"]) / Encoding.RAW.file_name
        path.parent.mkdir(parents=True)
        path.write_bytes(json.dumps(record, separators=(",", ":")).encode() + b"\n" + self.body)
        os.utime(path, (_OLD, _OLD))
        SessionCatalog.open(self.home).find(record["id"])  # indexes it, forgets the ones removed
        self.current = (iteration, record["id"], path)
        return record["id"], path


def _warm_p50(timings: dict[int, int], warmup: int) -> int:
    """The median of the iterations after the first `warmup`."""
    return percentile([ns for i, ns in timings.items() if i >= warmup], 50)


def _warmup_of(budget: Budget, runs: int) -> int:
    """How many of `runs` iterations were warm-up: the full budget's or the quick one's."""
    return budget.warmup if runs == budget.warmup + budget.iterations else budget.quick().warmup


@contextmanager
def _host_overhead() -> Iterator[Contenders]:
    with (
        tempfile.TemporaryDirectory(prefix="remem-bench-") as folder,
        # No real ~/.dsh: the only session root is the benchmark's own.
        _environment(**{KEY_ENV: _KEY, "DSH_HOME": str(Path(folder, "no-dsh"))}),
        FakeOpenAI(api_key=_KEY) as fake,
    ):
        root = Path(folder, "sessions")
        home = Home(Path(folder, "home"))
        configure(home, fake, root, timeout_seconds=60)
        draft = build_session(SessionSpec(seed=7, target_bytes=_SESSION_BYTES, cwd=_CWD))
        template = write_session(Path(folder, "template"), draft, encoding=Encoding.RAW)
        cited = project_evidence(read_session(template)).ranges()[0].model_dump()
        copies = _Copies(home, root, template)
        consolidator = Consolidator(home)
        loop = asyncio.new_event_loop()
        timings: dict[str, dict[int, int]] = {"remem": {}, "baseline": {}}

        def remem(iteration: int) -> Call:
            session, _ = copies.of(iteration)
            # The record is rewritten every time, so each review commits a change.
            fake.reply(tool_call(proposal(put(_RECORD, [cited], f"Revision {iteration}.\n"))))

            def review() -> object:
                start = time.perf_counter_ns()
                result = loop.run_until_complete(consolidator.consolidate(session, _ignore))
                timings["remem"][iteration] = time.perf_counter_ns() - start
                if (result.status, result.changes) != (Status.COMMITTED, 1):
                    raise RuntimeError(f"review {iteration} did not commit: {result}")
                return result

            return review

        def baseline(iteration: int) -> Call:
            _, path = copies.of(iteration)

            def projection_cost() -> None:
                start = time.perf_counter_ns()
                project_evidence(read_session(path))  # freed here, as the harness's timing frees it
                timings["baseline"][iteration] = time.perf_counter_ns() - start

            return projection_cost

        try:
            yield Contenders(remem=remem, baseline=baseline)
        finally:
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()
        print(_overhead_table(timings, _HOST_OVERHEAD_BUDGET), end="\n\n", flush=True)


def _ignore(phase: str, data: dict[str, Any]) -> None:
    """The progress a daemon would pass on to its client."""


def _overhead_table(timings: dict[str, dict[int, int]], budget: Budget) -> str:
    """p50 of each side (warm-up left out) and their difference, laid out like the harness table."""
    runs = len(timings["remem"])
    warmup = _warmup_of(budget, runs)
    remem, baseline = (_warm_p50(timings[side], warmup) for side in ("remem", "baseline"))
    table = _p50_table("consolidation.host-overhead", remem, baseline, _OVERHEAD_TARGET_NS, remem - baseline)
    return f"consolidation.host-overhead, {runs - warmup} reviews per side:\n{table}"


def _p50_table(name: str, remem: int, baseline: int, target_ns: int, judged: int) -> str:
    """One p50 row beside its baseline and the difference, `judged` against `target_ns`."""
    row = (
        name,
        "p50",
        _format_ns(remem),
        _format_ns(baseline),
        _format_ns(remem - baseline),
        f"≤ {target_ns / 1e6:.0f} ms",
        "ok" if judged <= target_ns else "over target",
    )
    return render_lines(
        [("benchmark", "metric", "remem", "baseline", "difference", "target", "verdict"), row]
    )


@contextmanager
def _project() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        # The log of `sessions.project-100k`: the same spec, so the same events.
        draft = build_session(SessionSpec(seed=3, target_events=_PROJECTED_EVENTS, cwd=_CWD))
        path = write_session(Path(folder), draft, encoding=Encoding.RAW)
        yield Contenders(
            remem=repeat(lambda: project_evidence(read_session(path))),
            baseline=repeat(lambda: read_session(path)),
        )


_HOST_OVERHEAD_BUDGET = Budget(iterations=40, warmup=3)

BENCHMARKS = [
    Benchmark(
        name="consolidation.host-overhead",
        note="one whole review of a ~1 MB raw log (indexed, never reviewed) against a fake model on "
        "loopback answering at once with a final proposal that commits one record; baseline: "
        "read_session + project_evidence of the same log (target: p50 remem - p50 baseline "
        f"≤ {_OVERHEAD_TARGET_NS / 1e6:.0f} ms; the difference prints in its own table before this one)",
        target=None,
        budget=_HOST_OVERHEAD_BUDGET,
        setup=_host_overhead,
    ),
    Benchmark(
        name="consolidation.project-100k",
        note=f"project_evidence(read_session(path)) of the {_PROJECTED_EVENTS}-event raw log of "
        "sessions.project-100k; baseline: read_session(path) alone",
        target=2.0,
        budget=Budget(iterations=9, warmup=1),
        setup=_project,
        informational=True,
    ),
]
