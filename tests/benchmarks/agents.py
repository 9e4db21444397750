"""Agent benchmarks: a `memory_context` call through `remem mcp` and the daemon, 200 records,
and the daemon's own share of it (`agents/context` over a held socket).

remem's side is the SDK's own client calling `memory_context` on a `remem mcp` subprocess,
which asks a running daemon (`agents/context`) unless its own watch proves the text it holds
current. The baseline is the least any MCP memory server costs: the same client, over the same
kind of stdio pipe, calling a tool of a minimal server built on the same SDK that returns a
fixed text of the very same size. Both clients live on one event loop, run by the benchmark's
thread for each call.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path

from mcp import Client, StdioServerParameters

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import call
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.record import RecordType
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import PutChange
from remem.daemon.server.runtime import DaemonPaths

from . import corpus
from .consolidation import _p50_table, _warm_p50, _warmup_of
from .daemon import _LineClient
from .harness import Benchmark, Budget, Call, Contenders, Prepare, repeat

_RECORDS = 200
_BODY_BYTES = 1024
_GLOBAL_BYTES = 4096
_TARGET_NS = 5_000_000
_EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
# The least an MCP server answering a memory tool does: the SDK's own server, one fixed text.
_FLOOR_SERVER = """
import sys, anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
with open(sys.argv[1], encoding="utf-8") as answer:
    TEXT = answer.read()
TOOL = types.Tool(name="memory_context", input_schema={"type": "object", "additionalProperties": False})
async def tools(ctx, params):
    return types.ListToolsResult(tools=[TOOL])
async def call(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text=TEXT)])
server = Server("floor", on_list_tools=tools, on_call_tool=call)
async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
anyio.run(main)
"""


class _Clients:
    """MCP clients held open by one task of a private event loop, between the timed calls.

    Each call runs the loop until the answer is in, in the benchmark's own thread, as the
    harness wants; the task that entered the clients also leaves them (the SDK's task groups
    must not change tasks).
    """

    def __init__(self, servers: dict[str, StdioServerParameters]) -> None:
        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        self._ready = self._loop.create_future()
        self.clients: dict[str, Client] = {}
        self._held = self._loop.create_task(self._hold(servers))
        self._loop.run_until_complete(asyncio.wait({self._ready, self._held}, return_when="FIRST_COMPLETED"))
        if self._held.done():
            self._loop.run_until_complete(self._held)  # raises why the clients did not open

    async def _hold(self, servers: dict[str, StdioServerParameters]) -> None:
        async with AsyncExitStack() as stack:
            for name, params in servers.items():
                self.clients[name] = await stack.enter_async_context(Client(params))
            self._ready.set_result(None)
            await self._stop.wait()

    def text_of(self, name: str) -> str:
        result = self._loop.run_until_complete(self.clients[name].call_tool("memory_context", {}))
        if result.is_error:
            raise RuntimeError(f"{name}: memory_context failed: {result.content}")
        return result.content[0].text  # type: ignore[union-attr]

    def close(self) -> None:
        self._stop.set()
        self._loop.run_until_complete(self._held)
        self._loop.close()


@contextmanager
def _filled_home() -> Iterator[tuple[Path, Home, Path]]:
    """A scratch folder, a home whose project workspace holds the 200 records, and the project;
    the home's daemon runs until the block ends."""
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as folder:
        home = Home(Path(folder, "home"))
        project = Path(folder, "project")
        project.mkdir()
        _fill(MemoryStore(home), WorkspaceId.from_cwd(project))
        call(home, "daemon/status")  # starts the daemon
        try:
            yield Path(folder), home, project
        finally:
            call(home, "daemon/shutdown", start=False)


@contextmanager
def _context_200() -> Iterator[Contenders]:
    with _filled_home() as (folder, home, project):
        remem = StdioServerParameters(
            command=sys.executable,
            args=["-m", "remem.daemon", "--home", str(home.root), "mcp", "--cwd", str(project)],
            env=_without_no_daemon(),
        )
        clients = _Clients({"remem": remem})
        try:
            answer = folder / "answer.md"
            answer.write_text(clients.text_of("remem"), encoding="utf-8")
            floor = StdioServerParameters(command=sys.executable, args=["-c", _FLOOR_SERVER, str(answer)])
            clients.close()
            clients = _Clients({"remem": remem, "floor": floor})
            if clients.text_of("floor") != clients.text_of("remem"):
                raise RuntimeError("the baseline does not answer the same text")
            timings: dict[str, dict[int, int]] = {"remem": {}, "floor": {}}
            yield Contenders(
                remem=_timed(clients, "remem", timings), baseline=_timed(clients, "floor", timings)
            )
        finally:
            clients.close()
        print(_target_table(timings, answer.stat().st_size), end="\n\n", flush=True)


@contextmanager
def _context_rpc() -> Iterator[Contenders]:
    with _filled_home() as (_, home, project):
        daemon = _LineClient(DaemonPaths(home).read_status().socket)  # type: ignore[union-attr]
        first = json.loads(daemon.ask(_request("agents/context", {"cwd": str(project)})))
        # What remem mcp asks when it holds the text but cannot prove it current itself.
        context = _request("agents/context", {"cwd": str(project), "known": first["result"]["observed"]})
        if json.loads(daemon.ask(context))["result"]["text"] is not None:
            raise RuntimeError("agents/context sent the text again")
        status = _request("daemon/status", {})
        yield Contenders(
            remem=repeat(lambda: daemon.ask(context)), baseline=repeat(lambda: daemon.ask(status))
        )


def _request(method: str, params: dict[str, object]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode() + b"\n"


def _fill(store: MemoryStore, workspace: WorkspaceId) -> None:
    kinds = list(RecordType)
    changes = [
        PutChange(
            action="put",
            record=corpus.record(
                f"topic-{n:03d}", corpus.markdown(_BODY_BYTES, start=n), kinds[n % len(kinds)].value
            ),
        )
        for n in range(_RECORDS)
    ]
    if store.commit_workspace(workspace, _EMPTY, changes).status != "committed":
        raise RuntimeError("the 200 records were not written")
    store.replace_global(_EMPTY, corpus.markdown(_GLOBAL_BYTES) + "\n")


def _without_no_daemon() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != NO_DAEMON_ENV}


def _timed(clients: _Clients, name: str, timings: dict[str, dict[int, int]]) -> Prepare:
    def prepare(iteration: int) -> Call:
        def ask() -> str:
            start = time.perf_counter_ns()
            text = clients.text_of(name)
            timings[name][iteration] = time.perf_counter_ns() - start
            return text

        return ask

    return prepare


def _target_table(timings: dict[str, dict[int, int]], size: int) -> str:
    """remem's absolute p50 against the 5 ms target, beside the floor's, laid out like the harness."""
    runs = len(timings["remem"])
    warmup = _warmup_of(_BUDGET, runs)
    remem, floor = (_warm_p50(timings[side], warmup) for side in ("remem", "floor"))
    table = _p50_table("agents.context-200", remem, floor, _TARGET_NS, remem)
    return f"agents.context-200, {runs - warmup} calls per side, a {size}-byte context:\n{table}"


_BUDGET = Budget(iterations=1000, warmup=100)

BENCHMARKS = [
    Benchmark(
        name="agents.context-200",
        note=f"memory_context through `remem mcp` and a running daemon, {_RECORDS} records of ~1 KiB and "
        "4 KiB of Global memory, with the SDK's own client over stdio; baseline: the same client "
        "calling a minimal server on the same SDK that returns the same text (target: p50 ≤ 5 ms "
        "absolute, in its own table before this one)",
        target=None,
        budget=_BUDGET,
        setup=_context_200,
    ),
    Benchmark(
        name="agents.context-rpc",
        note=f"agents/context for the same {_RECORDS} records over a held daemon connection, naming the "
        "observation whose text the caller holds, as remem mcp does when its own watch cannot prove "
        "that text current; baseline: daemon/status on the same connection",
        target=None,
        budget=Budget(iterations=2000, warmup=200),
        setup=_context_rpc,
    ),
]
