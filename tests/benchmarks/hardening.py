"""Hardening benchmark: the daemon's peak memory through each hostile file of the attack.

For each input of `tests/reliability/hostile.py` a fresh daemon starts on a home holding it and
a good session, is asked to list its roots or read the workspace holding it (the request that
read the input whole before the caps), and its peak resident set (`VmHWM`) is read. The floor
is the same daemon on the same home without the input, asked the same; the idle Unix-socket
server of `daemon.idle-rss` is shown too. The target is absolute: peak ≤ 200 MB.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from remem.daemon.client import call
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import RpcError
from remem.daemon.sessions.paths import Encoding
from tests.reliability.hostile import CWD, INPUTS, ROOTS, Hostile
from tests.sessions.factory import SessionSpec, build_session, write_session

from .daemon import _idle_server_memory, _median, _Memory, _memory_of, _render, _start_daemon, _Starts, _stop
from .harness import Benchmark, Call, Contenders

_PEAK_TARGET_BYTES = 200_000_000


def _home(folder: Path, hostile: Hostile | None) -> tuple[Home, str, dict[str, Any]]:
    """A home with a good session and, unless None, the hostile input; the request to make."""
    home, root, project = Home(folder / "home"), folder / "roots", folder / "project"
    home.ensure_layout()
    project.mkdir()
    roots = ", ".join(json.dumps(str(root / r)) for r in ROOTS)
    home.settings_file.write_text(f"sessions:\n  roots: [{roots}]\n")
    write_session(
        root / ROOTS[0], build_session(SessionSpec(seed=1, turns=3, cwd=CWD)), encoding=Encoding.RAW
    )
    (root / ROOTS[1]).mkdir(parents=True)
    if hostile is not None:
        hostile.write(root, home, project)
    if hostile is not None and hostile.in_memory:
        return home, "memory/readWorkspace", {"cwd": str(project)}
    return home, "sessions/list", {}


def _peak(folder: Path, hostile: Hostile | None, env: dict[str, str]) -> _Memory:
    home, method, params = _home(folder, hostile)
    daemon = _start_daemon(home, env)
    try:
        try:
            answer: dict[str, Any] | RpcError = call(home, method, params, start=False)
        except RpcError as exc:
            answer = exc
        _check(hostile, answer)
        return _memory_of(daemon.pid)
    finally:
        _stop(home, daemon)


def _check(hostile: Hostile | None, answer: dict[str, Any] | RpcError) -> None:
    """Only a daemon that answered, refusing the input alone with its cap named, is measured."""
    if hostile is None:
        assert not isinstance(answer, RpcError) and not answer["errors"], answer
    elif hostile.in_memory:
        assert isinstance(answer, RpcError), answer
        messages = [d["message"] for f in answer.data["files"] for d in f["diagnostics"]]
        assert any(hostile.refusal in m for m in messages), messages
    else:
        assert not isinstance(answer, RpcError) and len(answer["sessions"]) == 1, answer
        assert [hostile.refusal in e["message"] for e in answer["errors"]] == [True], answer["errors"]


@contextmanager
def _hostile_rss() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        root = Path(folder)
        env = {**os.environ, "DSH_HOME": str(root / "no-dsh")}
        peaks: dict[str, list[_Memory]] = {i.name: [] for i in INPUTS}
        floor: list[_Memory] = []
        idle: list[_Memory] = []

        def remem(iteration: int) -> Call:
            def each() -> None:
                for n, hostile in enumerate(INPUTS):
                    peaks[hostile.name].append(_peak(root / f"in-{iteration}-{n}", hostile, env))

            return each

        def baseline(iteration: int) -> Call:
            def both() -> None:
                floor.append(_peak(root / f"floor-{iteration}", None, env))
                idle.append(_idle_server_memory(str(root / f"idle-{iteration}.sock")))

            return both

        yield Contenders(remem=remem, baseline=baseline)
        print(_table(peaks, floor, idle), end="\n\n", flush=True)


def _table(peaks: dict[str, list[_Memory]], floor: list[_Memory], idle: list[_Memory]) -> str:
    base, server = _median(floor), _median(idle)
    lines = [("benchmark", "input", "peak", "floor peak", "ratio", "idle server", "target", "verdict")]
    for name, runs in peaks.items():
        mine = _median(runs)
        verdict = "ok" if mine.peak <= _PEAK_TARGET_BYTES else "over target"
        lines.append(
            (
                "daemon.hostile-rss",
                name,
                f"{mine.peak / 1e6:.1f} MB",
                f"{base.peak / 1e6:.1f} MB",
                f"{mine.peak / base.peak:.2f}",
                f"{server.peak / 1e6:.1f} MB",
                f"≤ {_PEAK_TARGET_BYTES / 1e6:.0f} MB",
                verdict,
            )
        )
    return _render(f"daemon.hostile-rss peak memory, median of {len(floor)} start(s) per input", lines)


BENCHMARKS = [
    Benchmark(
        name="daemon.hostile-rss",
        note="for each hostile input of the attack (a 1 GiB zstd bomb, a 100 MB line, a million tiny "
        "events, a 100 MB record, 100 000 front-matter keys) a fresh daemon lists its roots or reads "
        "the workspace holding it and its peak RSS (VmHWM) is read; floor: the same daemon and request "
        "without the input (target: peak ≤ 200 MB absolute). The memory figures print in their own "
        "table; the harness rows only time one cycle per side (no target)",
        target=None,
        budget=_Starts(iterations=1, warmup=0),
        setup=_hostile_rss,
        informational=True,
    ),
]
