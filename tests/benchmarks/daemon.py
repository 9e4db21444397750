"""Daemon benchmarks: a JSON-RPC round trip, and a cold start until the daemon answers."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from remem.daemon.client import call
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

from .harness import Benchmark, Budget, Contenders, repeat

# The baseline server: the same asyncio stream API, answering each line with itself.
_ECHO_SERVER = """
import asyncio, os, sys
async def echo(reader, writer):
    while line := await reader.readline():
        writer.write(line)
        await writer.drain()
async def main():
    server = await asyncio.start_unix_server(echo, path=sys.argv[1])
    print("ready", flush=True)
    async with server:
        await server.serve_forever()
asyncio.run(main())
"""


class _LineClient:
    """One blocking Unix-socket connection sending a line and reading the answer line."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.file = self.sock.makefile("rb")

    def ask(self, line: bytes) -> bytes:
        self.sock.sendall(line)
        return self.file.readline()


@contextmanager
def _round_trip() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        home = Home(Path(folder, "home"))
        call(home, "daemon/status")  # starts the daemon
        echo_path = str(Path(folder, "echo.sock"))
        echo = subprocess.Popen([sys.executable, "-c", _ECHO_SERVER, echo_path], stdout=subprocess.PIPE)
        assert echo.stdout is not None and echo.stdout.readline() == b"ready\n"
        try:
            daemon = _LineClient(DaemonPaths(home).read_status().socket)  # type: ignore[union-attr]
            plain = _LineClient(echo_path)
            request = (
                json.dumps({"jsonrpc": "2.0", "id": 1, "method": "daemon/status", "params": {}}).encode()
                + b"\n"
            )
            yield Contenders(
                remem=repeat(lambda: daemon.ask(request)), baseline=repeat(lambda: plain.ask(request))
            )
        finally:
            echo.kill()
            call(home, "daemon/shutdown", start=False)


@contextmanager
def _cold_start() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        home = Home(Path(folder, "home"))

        def start_until_ready() -> None:
            call(home, "daemon/status")
            call(home, "daemon/shutdown", start=False)
            while DaemonPaths(home).running():
                time.sleep(0.005)

        def interpreter() -> None:
            subprocess.run([sys.executable, "-c", "import remem.daemon.cli"], check=True)

        yield Contenders(remem=repeat(start_until_ready), baseline=repeat(interpreter))


BENCHMARKS = [
    Benchmark(
        name="daemon.rpc-roundtrip",
        note="daemon/status over a held connection; baseline: a newline-JSON echo server on the "
        "same kind of socket, asked the same line",
        target=3.0,
        budget=Budget(iterations=2000, warmup=200),
        setup=_round_trip,
    ),
    Benchmark(
        name="daemon.cold-start",
        note="spawn the daemon, answer daemon/status, shut it down; baseline: a Python process importing "
        "the remem CLI (target: ready within 1 s)",
        target=3.0,
        budget=Budget(iterations=10, warmup=1),
        setup=_cold_start,
        informational=True,
    ),
]
