"""Daemon benchmarks: a round trip, a cold start, warm session listings, idle memory."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from remem.daemon.client import DaemonUnavailable, call
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

from .harness import Benchmark, Budget, Call, Contenders, percentile, repeat
from .harness_listing import _corpus as harness_corpus
from .sessions import _CWD, _OTHER_CWDS, _SESSIONS, _corpus

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

# The payload floor: each line answered with the bytes of a file, on the same asyncio streams.
_PAYLOAD_SERVER = """
import asyncio, sys
answer = open(sys.argv[2], "rb").read()
async def serve(reader, writer):
    while await reader.readline():
        writer.write(answer)
        await writer.drain()
async def main():
    server = await asyncio.start_unix_server(serve, path=sys.argv[1], limit=1 << 24)
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


def _start_daemon(home: Home, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A daemon of `home`, started as `remem daemon run` does, once it answers."""
    paths = DaemonPaths(home)
    with open(paths.log, "ab") as log:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "run"],
            env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        )  # fmt: skip
    deadline = time.monotonic() + _STOP_SECONDS
    while paths.read_status() is None and daemon.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    return daemon


def _corpus_home(root: Path, name: str, watch: str = "auto", fmt: str = "dsh") -> Home:
    home = Home(root / name)
    home.ensure_layout()
    entry = {"path": str(root / "corpus"), "format": fmt}
    home.settings_file.write_text(f"sessions:\n  roots: [{json.dumps(entry)}]\ndaemon:\n  watch: {watch}\n")
    return home


def _files(root: Path, fmt: str) -> list[Path]:
    """The 2 000 files of ~100 KB of `sessions.list-cold` (DSH) or of the harness listings."""
    if fmt == "dsh":
        return _corpus(root, _SESSIONS)
    return harness_corpus(root / "corpus", fmt, _SESSIONS, (_CWD, *_OTHER_CWDS))


def _list_warm(watch: str, fmt: str = "dsh") -> Callable[[], AbstractContextManager[Contenders]]:
    @contextmanager
    def setup() -> Iterator[Contenders]:
        with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
            root = Path(folder)
            paths = _files(root, fmt)
            home = _corpus_home(root, "home", watch, fmt)
            env = {**os.environ, "DSH_HOME": str(root / "no-dsh")}
            daemon = _start_daemon(home, env)
            server: subprocess.Popen[bytes] | None = None
            try:
                assert len(call(home, "sessions/list", start=False)["sessions"]) == _SESSIONS
                client = _LineClient(DaemonPaths(home).read_status().socket)  # type: ignore[union-attr]
                request = b'{"jsonrpc":"2.0","id":1,"method":"sessions/list","params":{}}\n'
                answer = root / "answer.json"
                answer.write_bytes(client.ask(request))
                server, payload = _payload_server(root / "payload.sock", answer)
                yield Contenders(
                    remem=repeat(lambda: client.ask(request)),
                    baseline=repeat(lambda: [os.stat(p) for p in paths]),
                    others={
                        "payload": repeat(lambda: payload.ask(request)),
                        "stat+payload": repeat(lambda: ([os.stat(p) for p in paths], payload.ask(request))),
                    },
                )
            finally:
                if server is not None:
                    server.kill()
                _stop(home, daemon)

    return setup


def _payload_server(path: Path, answer: Path) -> tuple[subprocess.Popen[bytes], _LineClient]:
    """A bare asyncio server answering every line with the bytes of `answer`, and a client."""
    server = subprocess.Popen(
        [sys.executable, "-c", _PAYLOAD_SERVER, str(path), str(answer)], stdout=subprocess.PIPE
    )
    assert server.stdout is not None and server.stdout.readline() == b"ready\n"
    return server, _LineClient(str(path))


# Idle memory is read this long after the last request, once nothing runs any more.
_SETTLE_SECONDS = 3.0
_STOP_SECONDS = 15.0
_RSS_TARGET_BYTES = 120_000_000
# The least any Python daemon of this kind holds: the interpreter, an asyncio Unix-socket server
# (the round trip's echo server) and the json and sqlite3 modules, loaded and idle.
_IDLE_SERVER = "import json, sqlite3\n" + _ECHO_SERVER


@dataclass(frozen=True)
class _Memory:
    """A process's resident set now and at its peak, in bytes (`VmRSS`, `VmHWM`)."""

    rss: int
    peak: int


def _memory_of(pid: int) -> _Memory:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) * 1024  # the kernel reports kB, meaning KiB
    return _Memory(rss=fields["VmRSS"], peak=fields["VmHWM"])


def _idle_daemon_memory(home: Home, env: dict[str, str]) -> _Memory:
    """Start a daemon, have it list every session once, let it idle, read its memory, stop it."""
    paths = DaemonPaths(home)
    daemon = _start_daemon(home, env)
    try:
        assert call(home, "daemon/status", start=False)["pid"] == daemon.pid
        listing = call(home, "sessions/list", start=False)
        # Only a daemon that really indexed every log is measured.
        assert len(listing["sessions"]) == _SESSIONS and not listing["errors"], listing["errors"]
        time.sleep(_SETTLE_SECONDS)
        return _memory_of(daemon.pid)
    except DaemonUnavailable as exc:
        status = _stop(home, daemon)
        raise RuntimeError(f"{exc} (exit status {status}); its log says:\n{paths.log.read_text()}") from exc
    finally:
        _stop(home, daemon)


def _stop(home: Home, daemon: subprocess.Popen[bytes]) -> int:
    """Shut the daemon down and wait for its exit; SIGTERM, then SIGKILL, if it does not go."""
    if daemon.poll() is not None:
        return daemon.returncode
    try:
        call(home, "daemon/shutdown", start=False)
    except DaemonUnavailable:
        daemon.terminate()  # not listening (yet), or going: the daemon stops on SIGTERM too
    try:
        return daemon.wait(_STOP_SECONDS)
    except subprocess.TimeoutExpired:
        daemon.kill()
        return daemon.wait()


def _idle_server_memory(socket_path: str) -> _Memory:
    server = subprocess.Popen([sys.executable, "-c", _IDLE_SERVER, socket_path], stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None and server.stdout.readline() == b"ready\n"
        time.sleep(_SETTLE_SECONDS)
        return _memory_of(server.pid)
    finally:
        server.kill()
        server.wait()


class _Starts(Budget):
    """One process start per iteration: a quick run starts each side once."""

    def quick(self) -> Budget:
        return Budget(iterations=1, warmup=0)


@contextmanager
def _idle_rss() -> Iterator[Contenders]:
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        root = Path(folder)
        _corpus(root, _SESSIONS)
        # No real ~/.dsh: the daemon's roots are its own and the corpus, nothing else.
        env = {**os.environ, "DSH_HOME": str(root / "no-dsh")}
        cold: list[_Memory] = []
        warm: list[_Memory] = []
        baseline: list[_Memory] = []

        def remem(iteration: int) -> Call:
            home = _corpus_home(root, f"home-{iteration}")

            def starts() -> None:
                cold.append(_idle_daemon_memory(home, env))  # indexes every log itself
                warm.append(_idle_daemon_memory(home, env))  # opens the index the first one wrote

            return starts

        def server(iteration: int) -> Call:
            return lambda: baseline.append(_idle_server_memory(str(root / f"idle-{iteration}.sock")))

        yield Contenders(remem=remem, baseline=server)
        print(_memory_table(cold, warm, baseline), end="\n\n", flush=True)


def _memory_table(cold: Sequence[_Memory], warm: Sequence[_Memory], baseline: Sequence[_Memory]) -> str:
    """Medians of the starts (nearest rank), laid out like the harness table; MB = 10^6 bytes."""
    base = _median(baseline)
    lines = [("benchmark", "metric", "remem", "baseline", "ratio", "target", "verdict")]
    for label, runs in (("indexed here", cold), ("index reused", warm)):
        remem = _median(runs)
        verdict = "ok" if remem.rss <= _RSS_TARGET_BYTES else "over target"
        target = f"≤ {_RSS_TARGET_BYTES / 1e6:.0f} MB"
        for metric, mine, theirs, shown in (
            ("RSS", remem.rss, base.rss, True),
            ("peak", remem.peak, base.peak, False),
        ):
            lines.append(
                (
                    "daemon.idle-rss",
                    f"{metric}, {label}",
                    f"{mine / 1e6:.1f} MB",
                    f"{theirs / 1e6:.1f} MB",
                    f"{mine / theirs:.2f}",
                    target if shown else "",
                    verdict if shown else "",
                )
            )
    return _render(f"daemon.idle-rss memory, median of {len(baseline)} start(s) per side", lines)


def _render(title: str, lines: Sequence[Sequence[str]]) -> str:
    """A title, then `lines` (the first is the heading) laid out like the harness table."""
    widths = [max(len(line[column]) for line in lines) for column in range(len(lines[0]))]
    rendered = [" | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines]
    rendered.insert(1, "-+-".join("-" * width for width in widths))
    return f"{title}:\n" + "\n".join(rendered)


def _median(runs: Sequence[_Memory]) -> _Memory:
    return _Memory(rss=percentile([m.rss for m in runs], 50), peak=percentile([m.peak for m in runs], 50))


BENCHMARKS = [
    Benchmark(
        name="sessions.list-warm",
        note=f"sessions/list of {_SESSIONS} indexed logs through a running daemon (daemon.watch: "
        "polling); baseline: os.stat of every log; payload: a bare asyncio server sending the same answer",
        target=1.5,
        budget=Budget(iterations=20, warmup=3),
        setup=_list_warm("polling"),
    ),
    Benchmark(
        name="sessions.list-warm-inotify",
        note="the same through a daemon watching with inotify (target: ≤ 10 ms absolute); "
        "baseline: os.stat of every log",
        target=None,
        budget=Budget(iterations=20, warmup=3),
        setup=_list_warm("auto"),
    ),
    *(
        Benchmark(
            name=f"sessions.{fmt}-list-warm{suffix}",
            note=f"the same of {_SESSIONS} {fmt} files of ~100 KB over 20 workspaces, already indexed"
            + ("" if watch == "polling" else ", watched with inotify (target: ≤ 10 ms absolute)"),
            target=1.5 if watch == "polling" else None,
            budget=Budget(iterations=20, warmup=3),
            setup=_list_warm(watch, fmt),
        )
        for fmt in ("claude-code", "codex")
        for watch, suffix in (("polling", ""), ("auto", "-inotify"))
    ),
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
    Benchmark(
        name="daemon.idle-rss",
        note=f"a daemon whose root holds {_SESSIONS} raw logs of ~100 KB lists them once, idles "
        f"{_SETTLE_SECONDS:.0f} s, and its VmRSS is read; started on a fresh index, then again on the "
        "index it wrote; baseline: an idle asyncio Unix-socket server with json and sqlite3 imported "
        "(target: idle RSS ≤ 120 MB). The memory figures print in their own table before this one; "
        "the harness rows only time one measurement cycle per side (no target)",
        target=None,
        budget=_Starts(iterations=3, warmup=0),
        setup=_idle_rss,
        informational=True,
    ),
]
