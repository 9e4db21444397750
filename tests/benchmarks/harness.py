"""Shared benchmark machinery: interleaved timing, percentiles, verdicts and the results table.

A benchmark pits remem against its physical-limit baseline on identical inputs in the same
run, alternating them call by call, so machine noise (frequency scaling, other processes,
page-cache state) lands on both sides instead of skewing their ratio.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

Call = Callable[[], object]
Prepare = Callable[[int], Call]
"""Builds iteration `i`'s call, untimed, so per-iteration inputs never count as work."""


class Unavailable(Exception):
    """A benchmark cannot run on this machine (a tool is missing); the runner skips it and says why."""


@dataclass(frozen=True)
class Contenders:
    """remem and its floor; `others` are further floors (earlier ones, kept for history),
    measured in the same interleaved loop and reported beside the ratio as extra columns."""

    remem: Prepare
    baseline: Prepare
    others: dict[str, Prepare] = field(default_factory=dict)


@dataclass(frozen=True)
class Budget:
    iterations: int
    warmup: int

    def quick(self) -> Budget:
        """A smoke-run budget: enough to exercise the code, too few for trustworthy figures."""
        return Budget(iterations=max(10, self.iterations // 20), warmup=max(2, self.warmup // 20))


@dataclass(frozen=True)
class Benchmark:
    """One remem operation and its baseline; `setup` yields them and cleans up afterwards."""

    name: str
    note: str
    target: float | None  # None: the timing is context, the benchmark reports its own figures
    budget: Budget
    setup: Callable[[], AbstractContextManager[Contenders]]
    informational: bool = False


@dataclass(frozen=True)
class Row:
    """One table line: a percentile of both sides; only the p50 line carries the target."""

    benchmark: str
    metric: str
    remem_ns: int
    baseline_ns: int
    target: float | None
    informational: bool
    others: dict[str, int] = field(default_factory=dict)  # this percentile of each further floor

    @property
    def ratio(self) -> float:
        return self.remem_ns / self.baseline_ns

    @property
    def verdict(self) -> str:
        if self.target is None:
            return ""
        return "ok" if self.ratio <= self.target else "over target"

    def as_dict(self) -> dict[str, object]:
        return {
            "benchmark": self.benchmark,
            "metric": self.metric,
            "remem_ns": self.remem_ns,
            "baseline_ns": self.baseline_ns,
            "ratio": round(self.ratio, 3),
            "target": self.target,
            "informational": self.informational,
            "verdict": self.verdict,
            "others_ns": self.others,
        }


def repeat(call: Call) -> Prepare:
    """A `Prepare` for operations whose input is the same every iteration."""
    return lambda _iteration: call


def run(benchmark: Benchmark, *, quick: bool) -> list[Row]:
    budget = benchmark.budget.quick() if quick else benchmark.budget
    with benchmark.setup() as contenders:
        remem, baseline, others = _measure(contenders, budget)
    return [
        Row(
            benchmark.name,
            metric,
            percentile(remem, pct),
            percentile(baseline, pct),
            benchmark.target if metric == "p50" else None,
            benchmark.informational,
            {name: percentile(samples, pct) for name, samples in others.items()},
        )
        for metric, pct in (("p50", 50), ("p99", 99))
    ]


def percentile(samples: Sequence[int], pct: float) -> int:
    """Nearest-rank percentile: always a measured sample, never an interpolation."""
    ordered = sorted(samples)
    return ordered[max(1, math.ceil(pct / 100 * len(ordered))) - 1]


COLUMNS = ("benchmark", "metric", "remem", "baseline", "ratio", "target", "verdict", "other floors")


def format_table(rows: Sequence[Row]) -> str:
    lines = [COLUMNS] + [
        (
            r.benchmark,
            r.metric,
            _format_ns(r.remem_ns),
            _format_ns(r.baseline_ns),
            f"{r.ratio:.2f}",
            _target_text(r),
            r.verdict,
            ", ".join(f"{name} {_format_ns(ns)} (×{r.remem_ns / ns:.2f})" for name, ns in r.others.items()),
        )
        for r in rows
    ]
    return render_lines(lines)


def render_lines(lines: Sequence[Sequence[str]]) -> str:
    """A header line and rows as aligned text columns, with a rule under the header."""
    widths = [max(len(line[column]) for line in lines) for column in range(len(lines[0]))]
    rendered = [
        " | ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    ]
    rendered.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(rendered)


def _format_ns(ns: int) -> str:
    if ns < 1_000_000:
        return f"{ns / 1_000:.1f} µs"
    return f"{ns / 1_000_000:.2f} ms"


def _target_text(row: Row) -> str:
    if row.target is None:
        return ""
    return f"≤ {row.target:.1f}" + (" (info)" if row.informational else "")


def _measure(contenders: Contenders, budget: Budget) -> tuple[list[int], list[int], dict[str, list[int]]]:
    remem: list[int] = []
    baseline: list[int] = []
    others: dict[str, list[int]] = {name: [] for name in contenders.others}
    sides = (
        (contenders.remem, remem),
        (contenders.baseline, baseline),
        *((prepare, others[name]) for name, prepare in contenders.others.items()),
    )
    for iteration in range(budget.warmup + budget.iterations):
        # Alternate who goes first so neither side always inherits the other's warm caches.
        for prepare, samples in sides if iteration % 2 == 0 else sides[::-1]:
            elapsed = _time(prepare(iteration))
            if iteration >= budget.warmup:
                samples.append(elapsed)
    return remem, baseline, others


def _time(call: Call) -> int:
    # As in timeit: a collection triggered by earlier garbage would be charged to whichever
    # side happened to be running.
    gc.disable()
    try:
        start = time.perf_counter_ns()
        call()
        return time.perf_counter_ns() - start
    finally:
        gc.enable()
