"""Large answers: a client that reads them gets every one, however many it asked for at once;
what the daemon holds for them is bounded by the requests under way, not by cutting off a
reader; a client that closed has nothing more run for it."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable

import pytest
from pydantic import BaseModel

from remem.daemon.home import Home
from remem.daemon.protocol.rpc import METHODS, SESSIONS_TRANSCRIPT, TranscriptResult
from remem.daemon.server import jsonrpc
from remem.daemon.server.jsonrpc import HEAVY_AT_ONCE, MAX_IN_FLIGHT, Connection, Dispatcher
from remem.daemon.server.process import Daemon
from remem.daemon.server.running_settings import RunningSettings
from remem.daemon.server.session_methods import SessionMethods

Handler = Callable[[BaseModel], Awaitable[BaseModel]]


class _Text(BaseModel):
    text: str


def _request(n: int, method: str = "daemon/status", params: str = "{}") -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":%s}\n' % (n, method.encode(), params.encode())


def _lines(sock: socket.socket, count: int) -> list[bytes]:
    """The next `count` lines from `sock`, fewer when it ends first."""
    received, lines = b"", []
    while len(lines) < count:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        received += chunk
        *whole, received = received.split(b"\n")
        lines += whole
    return lines


async def _serving(dispatcher: Dispatcher) -> tuple[asyncio.Task[None], socket.socket]:
    """`dispatcher` serving one client in this loop, and the client's end (blocking)."""
    ours, theirs = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=ours)
    return asyncio.create_task(Connection(reader, writer, dispatcher).serve()), theirs


def test_a_client_reading_several_large_answers_gets_them_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """The answers a client asked for counted against a bound in bytes, meant for a client that
    does not read: three 38 MiB transcripts asked for together cut off the editor reading them.
    Scaled down here: the bound is one answer, and four are asked for at once."""
    monkeypatch.setattr(jsonrpc, "OUTBOX_BYTES", 1 << 20)
    answer = _Text(text="x" * (1 << 20))

    async def large(params: BaseModel) -> BaseModel:
        return answer

    async def scenario() -> list[bytes]:
        served, client = await _serving(Dispatcher(dict.fromkeys(METHODS, large), 64 << 20))
        with client:
            client.sendall(b"".join(_request(n) for n in range(4)))
            lines = await asyncio.to_thread(_lines, client, 4)
        await served
        return lines

    lines = asyncio.run(scenario())
    assert sorted(json.loads(line)["id"] for line in lines) == [0, 1, 2, 3]
    assert all(json.loads(line)["result"] == answer.model_dump() for line in lines)


def test_what_a_client_closed_on_is_not_run() -> None:
    """A client that sent sixteen transcripts and closed had them all rendered, gigabytes for
    nobody. Requests under way when it closed run to their end; those it sent after never run."""
    ran: list[int] = []

    async def scenario() -> None:
        all_in, go = asyncio.Event(), asyncio.Event()

        async def held(params: BaseModel) -> BaseModel:
            ran.append(1)
            if len(ran) == MAX_IN_FLIGHT:
                all_in.set()
            await go.wait()
            return _Text(text="done")

        served, client = await _serving(Dispatcher(dict.fromkeys(METHODS, held), 64 << 20))
        client.sendall(b"".join(_request(n) for n in range(MAX_IN_FLIGHT + 24)))
        await all_in.wait()
        client.close()  # both ways: not a half-closed client still reading
        go.set()
        await served

    asyncio.run(scenario())
    assert len(ran) == MAX_IN_FLIGHT


def test_a_client_that_closed_only_its_sending_side_gets_every_answer() -> None:
    """Only a client gone both ways has its requests dropped: one that shut its sending side
    (POLLRDHUP, not POLLHUP) still reads, heavy answers waiting for their turn included."""

    async def answer(params: BaseModel) -> BaseModel:
        return _Text(text="y" * (1 << 20))

    async def scenario() -> list[bytes]:
        dispatcher = Dispatcher(dict.fromkeys(METHODS, answer), 64 << 20, heavy=["daemon/status"])
        served, client = await _serving(dispatcher)
        with client:
            client.sendall(b"".join(_request(n) for n in range(HEAVY_AT_ONCE + 2)))
            client.shutdown(socket.SHUT_WR)
            lines = await asyncio.to_thread(_lines, client, HEAVY_AT_ONCE + 3)
        await served
        return lines

    lines = asyncio.run(scenario())
    assert sorted(json.loads(line)["id"] for line in lines) == list(range(HEAVY_AT_ONCE + 2))


def test_heavy_requests_past_the_bound_wait_while_a_light_one_is_answered(tmp_path_factory: object) -> None:
    """Sixteen transcripts of a 40 MB session rendered at once took 2.6 GB. The daemon renders
    `HEAVY_AT_ONCE` at a time, each until its answer is encoded; the rest wait, and a status
    is answered meanwhile."""
    home = Home(tmp_path_factory.mktemp("home"))  # type: ignore[attr-defined]
    home.ensure_layout()
    rendering: list[int] = []

    async def scenario() -> tuple[int, bytes, list[bytes]]:
        in_turn, go = asyncio.Event(), asyncio.Event()

        async def transcript(self: SessionMethods, params: BaseModel) -> TranscriptResult:
            rendering.append(1)
            if len(rendering) == HEAVY_AT_ONCE:
                in_turn.set()
            await go.wait()
            return TranscriptResult(markdown="# a session\n", revision="r")

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(SessionMethods, "transcript", transcript)
            dispatcher = Daemon(home, RunningSettings(home)).dispatcher
        served, heavy = await _serving(dispatcher)
        light_served, light = await _serving(dispatcher)
        asked = HEAVY_AT_ONCE + 2
        heavy.sendall(b"".join(_request(n, SESSIONS_TRANSCRIPT.name, '{"id":"s"}') for n in range(asked)))
        await in_turn.wait()
        light.sendall(_request(0))
        [status] = await asyncio.to_thread(_lines, light, 1)
        rendered_meanwhile = len(rendering)
        go.set()
        answers = await asyncio.to_thread(_lines, heavy, asked)
        for client in (heavy, light):
            client.close()
        await asyncio.gather(served, light_served)
        return rendered_meanwhile, status, answers

    rendered_meanwhile, status, answers = asyncio.run(scenario())
    assert "pid" in json.loads(status)["result"]
    assert rendered_meanwhile == HEAVY_AT_ONCE
    assert [json.loads(a)["result"]["markdown"] for a in answers] == ["# a session\n"] * (HEAVY_AT_ONCE + 2)


def test_a_client_not_reading_its_heavy_answers_keeps_no_turn_from_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A heavy turn was held until the answer was read: a client reading slowly (or not yet)
    kept every other client's transcript waiting, the editor's tab with it. The turn ends with
    the answer encoded; a client that reads nothing is cut off only by the write timeout, here
    far longer than the test."""
    monkeypatch.setattr(jsonrpc, "WRITE_TIMEOUT_SECONDS", 3600.0)
    big = _Text(text="z" * (8 << 20))  # more than a socket's buffer takes
    made: list[int] = []

    async def scenario() -> bytes:
        both_made = asyncio.Event()

        async def answer(params: BaseModel) -> BaseModel:
            made.append(1)
            if len(made) == HEAVY_AT_ONCE:
                both_made.set()
            return big

        dispatcher = Dispatcher(dict.fromkeys(METHODS, answer), 64 << 20, heavy=["daemon/status"])
        stuck_served, stuck = await _serving(dispatcher)
        other_served, other = await _serving(dispatcher)
        stuck.sendall(b"".join(_request(n) for n in range(HEAVY_AT_ONCE)))  # never read
        await both_made.wait()  # every turn taken by answers nobody reads
        other.sendall(_request(7))
        [line] = await asyncio.wait_for(asyncio.to_thread(_lines, other, 1), 600)  # a hang's guard
        for client in (stuck, other):
            client.close()
        await asyncio.gather(stuck_served, other_served)
        return line

    assert json.loads(asyncio.run(scenario()))["id"] == 7
