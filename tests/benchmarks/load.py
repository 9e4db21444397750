"""Reads under load: 50 socket clients asking the daemon at once, each as fast as it is answered.

One iteration is a burst: every client sends `_PER_CLIENT` requests back to back on its own
connection (a new one only after the previous answer), all clients at once. remem's side asks
`memory/readWorkspace` for a workspace of 200 records; the floor asks `daemon/status`, the
cheapest method, on the same daemon under the same load, so what the floor costs is the socket,
the event loop and JSON-RPC framing. A further floor, `payload`, is a bare asyncio server
answering each line with remem's own answer bytes (about 190 KB): what carrying that answer to
50 clients costs on this machine, whatever the server does. Besides the harness's burst times,
the benchmark prints throughput and per-request latency percentiles of every side against the
targets (≥ 2 000 reads/s, p99 ≤ 50 ms).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from remem.daemon.server.runtime import DaemonPaths

from .agents import _filled_home, _request
from .daemon import _PAYLOAD_SERVER, _LineClient
from .harness import Benchmark, Budget, Call, Contenders, Prepare, percentile, render_lines

T = TypeVar("T")
_CLIENTS = 50
_PER_CLIENT = 20
_TARGET_READS_PER_SECOND = 2000
_TARGET_P99_NS = 50_000_000


class _Load:
    """`_CLIENTS` connections held open on a private event loop between the timed bursts."""

    def __init__(self, socket_path: str) -> None:
        self._loop = asyncio.new_event_loop()
        opening = [asyncio.open_unix_connection(socket_path, limit=1 << 24) for _ in range(_CLIENTS)]
        self._streams = self._loop.run_until_complete(self._all(opening))

    def burst(self, request: bytes, latencies: list[int]) -> None:
        clients = [self._client(reader, writer, request, latencies) for reader, writer in self._streams]
        self._loop.run_until_complete(self._all(clients))

    @staticmethod
    async def _all(coroutines: list[Coroutine[Any, Any, T]]) -> list[T]:
        return list(await asyncio.gather(*coroutines))

    async def _client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes, latencies: list[int]
    ) -> None:
        for _ in range(_PER_CLIENT):
            start = time.perf_counter_ns()
            writer.write(request)
            answer = await reader.readuntil(b"\n")
            latencies.append(time.perf_counter_ns() - start)
            if b'"result"' not in answer[:64] and b'"result"' not in answer[-400:]:
                raise RuntimeError(f"the daemon refused: {answer[:200]!r}")

    def close(self) -> None:
        for _, writer in self._streams:
            writer.close()
        self._loop.close()


@contextmanager
def _reads_under_load() -> Iterator[Contenders]:
    with _filled_home() as (folder, home, project):
        socket_path = DaemonPaths(home).read_status().socket  # type: ignore[union-attr]
        read = _request("memory/readWorkspace", {"cwd": str(project)})
        answer = folder / "answer.json"
        answer.write_bytes(_LineClient(socket_path).ask(read))
        payload_path = str(folder / "payload.sock")
        server = subprocess.Popen(
            [sys.executable, "-c", _PAYLOAD_SERVER, payload_path, str(answer)], stdout=subprocess.PIPE
        )
        assert server.stdout is not None and server.stdout.readline() == b"ready\n"
        load, payload = _Load(socket_path), _Load(payload_path)
        sides = {
            "remem": (load, read, [], []),
            "floor": (load, _request("daemon/status", {}), [], []),
            "payload": (payload, read, [], []),
        }  # clients, request, per-request latencies, burst wall times

        def timed(side: str) -> Prepare:
            clients, request, latencies, walls = sides[side]

            def prepare(iteration: int) -> Call:
                def burst() -> None:
                    start = time.perf_counter_ns()
                    clients.burst(request, latencies if iteration >= _BUDGET.warmup else [])
                    if iteration >= _BUDGET.warmup:
                        walls.append(time.perf_counter_ns() - start)

                return burst

            return prepare

        try:
            yield Contenders(
                remem=timed("remem"), baseline=timed("floor"), others={"payload": timed("payload")}
            )
        finally:
            load.close()
            payload.close()
            server.kill()
        print(
            _load_table({side: (lat, walls) for side, (_, _, lat, walls) in sides.items()}),
            end="\n\n",
            flush=True,
        )


def _load_table(measured: dict[str, tuple[list[int], list[int]]]) -> str:
    lines = [("benchmark", "metric", "remem", "floor", "payload", "target", "verdict")]
    if not measured["remem"][1]:
        return "daemon.reads-50-clients: no measured bursts"
    rates = {side: len(lat) / (sum(walls) / 1e9) for side, (lat, walls) in measured.items()}
    lines.append(
        (
            "daemon.reads-50-clients",
            "requests/s",
            f"{rates['remem']:.0f}",
            f"{rates['floor']:.0f}",
            f"{rates['payload']:.0f}",
            f"≥ {_TARGET_READS_PER_SECOND}",
            "ok" if rates["remem"] >= _TARGET_READS_PER_SECOND else "over target",
        )
    )
    for pct in (50, 99):
        remem, floor, payload = (
            percentile(measured[side][0], pct) / 1e6 for side in ("remem", "floor", "payload")
        )
        target = f"≤ {_TARGET_P99_NS / 1e6:.0f} ms" if pct == 99 else ""
        verdict = ("ok" if remem * 1e6 <= _TARGET_P99_NS else "over target") if pct == 99 else ""
        lines.append(
            (
                "daemon.reads-50-clients",
                f"latency p{pct}",
                f"{remem:.2f} ms",
                f"{floor:.2f} ms",
                f"{payload:.2f} ms",
                target,
                verdict,
            )
        )
    count = len(measured["remem"][0])
    return f"daemon.reads-50-clients, {_CLIENTS} clients, {count} requests per side:\n" + render_lines(lines)


_BUDGET = Budget(iterations=20, warmup=2)

BENCHMARKS = [
    Benchmark(
        name="daemon.reads-50-clients",
        note=f"{_CLIENTS} socket clients at once, each sending {_PER_CLIENT} memory/readWorkspace requests "
        "back to back for a workspace of 200 records of ~1 KiB, timed per burst; floor: daemon/status "
        "under the same load from the same clients; payload: a bare asyncio server sending the same "
        "answer (targets: ≥ 2 000 reads/s and p99 ≤ 50 ms, in their own table before this one)",
        target=None,
        budget=_BUDGET,
        setup=_reads_under_load,
    ),
]
