"""`python -m tests.benchmarks`: run the registered benchmarks and print remem vs its baselines.

Timings are reported, never asserted: the exit code is 0 unless a benchmark crashes (1) or the
command line is wrong (2). A benchmark whose tools are missing is skipped with the reason.
"""

from __future__ import annotations

import argparse
import compileall
import importlib
import json
import os
import platform
import sys
import traceback
from collections.abc import Sequence
from datetime import date
from pathlib import Path

from ..scratch import process_folder
from . import (
    agents,
    consolidation,
    daemon,
    editor,
    forks,
    hardening,
    harness_forks,
    harness_listing,
    history,
    load,
    lsp,
    memory,
    sessions,
)
from .harness import Benchmark, Row, Unavailable, format_table, run

BENCHMARKS: list[Benchmark] = [
    *memory.BENCHMARKS,
    *history.BENCHMARKS,
    *sessions.BENCHMARKS,
    *forks.BENCHMARKS,
    *harness_forks.BENCHMARKS,
    *harness_listing.BENCHMARKS,
    *daemon.BENCHMARKS,
    *hardening.BENCHMARKS,
    *load.BENCHMARKS,
    *consolidation.BENCHMARKS,
    *lsp.BENCHMARKS,
    *agents.BENCHMARKS,
    *editor.BENCHMARKS,
]


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    selected = [b for b in BENCHMARKS if args.only is None or args.only in b.name]
    if not selected:
        parser.error(f"no benchmark name contains {args.only!r}")
    # The daemons and editors benchmarked here must not list the real ~/.claude or ~/.codex.
    nowhere = process_folder("remem-bench-no-harness-")
    os.environ["CLAUDE_CONFIG_DIR"], os.environ["CODEX_HOME"] = f"{nowhere}/claude", f"{nowhere}/codex"
    _compile_bytecode()
    facts = machine_facts()
    print("\n".join(f"{key}: {value}" for key, value in facts.items()), end="\n\n")
    rows, skipped, crashed = _run_all(selected, quick=args.quick)
    print(format_table(rows), end="\n\n")
    print("\n".join(f"{b.name}: {b.note}" for b in selected))
    if skipped:
        print("\n" + "\n".join(f"skipped {name}: {reason}" for name, reason in skipped.items()))
    if args.json is not None:
        _write_json(args.json, facts, selected, rows, skipped, quick=args.quick)
    if crashed:
        print(f"\ncrashed: {', '.join(crashed)}", file=sys.stderr)
    return 1 if crashed else 0


def _compile_bytecode() -> None:
    """Compile remem's modules, as installing it does. A cold listing's worker process imports
    the readers when it starts; where bytecode is never written (`PYTHONDONTWRITEBYTECODE`, an
    editable checkout) each start compiled them from source, a cost no installed remem pays:
    it made a worker start 0.25 s instead of 0.18 s, and a listing's spread that much later."""
    for package in ("remem.daemon", "remem.lsp", "remem.agents"):
        for folder in importlib.import_module(package).__path__:
            compileall.compile_dir(folder, quiet=1)


def machine_facts() -> dict[str, str]:
    return {
        "date": date.today().isoformat(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "cpus": str(os.cpu_count()),
        "platform": platform.platform(),
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks", description=__doc__)
    parser.add_argument("--only", metavar="NAME", help="run only benchmarks whose name contains NAME")
    parser.add_argument("--quick", action="store_true", help="few iterations: a smoke run, not figures")
    parser.add_argument("--json", metavar="FILE", type=Path, help="also write the results to FILE")
    return parser


def _run_all(benchmarks: Sequence[Benchmark], *, quick: bool) -> tuple[list[Row], dict[str, str], list[str]]:
    rows: list[Row] = []
    skipped: dict[str, str] = {}
    crashed: list[str] = []
    for benchmark in benchmarks:
        print(f"running {benchmark.name} ...", file=sys.stderr, flush=True)
        try:
            rows += run(benchmark, quick=quick)
        except Unavailable as reason:
            print(f"skipped {benchmark.name}: {reason}", file=sys.stderr, flush=True)
            skipped[benchmark.name] = str(reason)
        except Exception:
            # One broken benchmark should not hide the figures of the others.
            traceback.print_exc()
            crashed.append(benchmark.name)
    return rows, skipped, crashed


def _write_json(
    path: Path,
    facts: dict[str, str],
    benchmarks: Sequence[Benchmark],
    rows: Sequence[Row],
    skipped: dict[str, str],
    *,
    quick: bool,
) -> None:
    document = {
        "machine": facts,
        "quick": quick,
        "notes": {b.name: b.note for b in benchmarks},
        "results": [r.as_dict() for r in rows],
        "skipped": skipped,
    }
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
