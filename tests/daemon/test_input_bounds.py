"""What one client's input can cost the daemon is bounded: invalid params are said by their first
problems, every error fits the answer cap, a long message is checked off the event loop, an
unfinished message that stops coming is cut off, clients past a cap are refused, a broadcast
costs no more per client the more there are, and a flood of failed accepts is logged once."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import resource
import socket
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, model_validator

from remem.daemon.home import Home
from remem.daemon.protocol.rpc import METHODS, CommitWorkspaceParams, Empty
from remem.daemon.server import jsonrpc, process
from remem.daemon.server.jsonrpc import Backlogs, Connection, Dispatcher
from remem.daemon.server.process import Daemon
from remem.daemon.server.running_settings import RunningSettings

MIB = 1 << 20
_PUT = {"action": "put", "record": {"name": "r", "description": "d", "type": "feedback", "content": "B.\n"}}


async def _empty(params: BaseModel) -> BaseModel:
    return Empty()


def _dispatcher(cap: int = 64 * MIB) -> Dispatcher:
    return Dispatcher(dict.fromkeys(METHODS, _empty), cap)


def _commit(changes: list[Any], **message: Any) -> bytes:
    params = {"cwd": "/w", "expectedRevision": "x", "changes": changes}
    return json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "memory/commitWorkspace", "params": params, **message}
    ).encode()


def _ask(dispatcher: Dispatcher, frame: bytes) -> bytes:
    answer = asyncio.run(dispatcher.handle(frame))
    assert answer is not None
    return answer


@pytest.mark.parametrize(
    ("changes", "fields", "said"),
    [
        # Short enough to be looked at all at once: every problem is counted.
        ([0] * 30, [f"changes.{n}" for n in range(20)], "30 problems, the first 20 of them listed"),
        # Long: its first items fail, and nothing further is looked at.
        (
            [0] * 200_000,
            [f"changes.{n}" for n in range(20)],
            "its first 20 problems (more are not looked for)",
        ),
        # Long, its first items valid: counted, and the first problems found past them.
        (
            [_PUT] * 25 + [0] * 100_000,
            [f"changes.{n}" for n in range(25, 45)],
            "100000 problems, the first 20",
        ),
    ],
)
def test_invalid_params_are_said_by_their_first_problems(
    changes: list[Any], fields: list[str], said: str
) -> None:
    """Two million wrong items were listed as two million problems: 7 s and gigabytes on the
    event loop, sent back as a 225 MB error. At most 20 are, with how many there are."""
    answer = _ask(_dispatcher(), _commit(changes))
    error = json.loads(answer)["error"]
    assert error["code"] == -32602
    assert said in error["message"] and error["message"].startswith(
        "invalid params for memory/commitWorkspace"
    )
    assert [problem["field"] for problem in error["data"]] == fields
    assert all(problem["message"] for problem in error["data"])
    assert len(answer) < 8192


def test_a_few_problems_are_all_said_as_before() -> None:
    answer = _ask(_dispatcher(), _commit([_PUT, 0, {"action": "delete"}]))
    error = json.loads(answer)["error"]
    assert error["message"] == "invalid params for memory/commitWorkspace"
    assert [problem["field"] for problem in error["data"]] == ["changes.1", "changes.2.delete.name"]


def test_every_error_fits_the_answer_cap() -> None:
    """The cap applied only to results: with `daemon.max_answer_bytes` at 1 MiB, a request
    could still be answered with an error of megabytes."""
    cap = MIB
    dispatcher = _dispatcher(cap)
    long_key = "k" * (2 * MIB)
    frames = {
        "unknown method": json.dumps({"jsonrpc": "2.0", "id": 1, "method": "m" * (2 * MIB)}).encode(),
        "a long key": json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "daemon/status", "params": {long_key: 1}}
        ).encode(),
        "a long id": _commit([0], id="i" * (2 * MIB)),
        "a long lone surrogate's key": json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "daemon/status", "params": {long_key + "\ud800": 1}}
        ).encode(),
    }
    for what, frame in frames.items():
        answer = _ask(dispatcher, frame)
        reply = json.loads(answer)
        assert len(answer) <= cap, (what, len(answer))
        assert reply["error"]["code"] in (-32601, -32602), (what, reply["error"]["code"])


class _Waiting(CommitWorkspaceParams):
    """Commit params whose validation waits until the test says another client was answered."""

    started: ClassVar[threading.Event] = threading.Event()
    released: ClassVar[threading.Event] = threading.Event()
    waits: ClassVar[list[bool]] = []

    @model_validator(mode="before")
    @classmethod
    def _wait(cls, data: Any) -> Any:
        cls.started.set()
        # Not a timing bound: only how long a check done on the event loop (which could not be
        # released) holds the test before it fails, rather than hang.
        cls.waits.append(cls.released.wait(60))
        return data


def test_a_long_message_is_checked_while_others_are_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Validating a pathological message on the event loop held every other client for 10-15 s."""
    method = METHODS["memory/commitWorkspace"]
    monkeypatch.setitem(METHODS, method.name, dataclasses.replace(method, params=_Waiting))
    dispatcher = _dispatcher()
    put = {"action": "put", "record": {**_PUT["record"], "content": "x" * (jsonrpc.OFF_LOOP_BYTES + 1)}}  # type: ignore[dict-item]
    answered: list[str] = []

    async def scenario() -> None:
        async def ask(what: str, frame: bytes) -> None:
            await dispatcher.handle(frame)
            answered.append(what)

        long = asyncio.create_task(ask("long", _commit([put])))
        while not _Waiting.started.is_set():
            await asyncio.sleep(0.01)
        await ask("status", b'{"jsonrpc":"2.0","id":2,"method":"daemon/status"}')
        _Waiting.released.set()
        await long

    asyncio.run(scenario())
    assert answered == ["status", "long"]
    assert _Waiting.waits and all(_Waiting.waits), "the long message's check waited for the other answer"


async def _serve(
    dispatcher: Dispatcher, **shared: Any
) -> tuple[list[asyncio.Task[None]], list[socket.socket], list[Connection]]:
    served, ends, connections = [], [], []
    for _ in range(shared.pop("clients", 2)):
        ours, theirs = socket.socketpair()
        theirs.setblocking(False)
        reader, writer = await asyncio.open_connection(sock=ours)
        connection = Connection(reader, writer, dispatcher, **shared)
        connections.append(connection)
        served.append(asyncio.create_task(connection.serve()))
        ends.append(theirs)
    return served, ends, connections


# How many times a helper below looks for more before it gives up (a minute at least): no
# bound on speed, only what keeps a regression (nothing ever comes) from hanging the run.
_LOOKS = 6000


async def _line(end: socket.socket) -> bytes:
    """The next line `end` receives (what came of it when it is closed first, or nothing came)."""
    got = b""
    for _ in range(_LOOKS):
        if got.endswith(b"\n"):
            break
        try:
            more = end.recv(1 << 20)
        except BlockingIOError:
            await asyncio.sleep(0.01)
            continue
        if not more:
            break
        got += more
    return got


async def _closed(end: socket.socket) -> bool:
    for _ in range(_LOOKS):
        try:
            return end.recv(1 << 20) == b""
        except BlockingIOError:
            await asyncio.sleep(0.01)
        except ConnectionError:
            return True
    return False


def test_a_message_left_unfinished_closes_its_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    """250 clients that sent 4 MiB without a newline and went silent held a gigabyte for good.
    A message that stops coming is cut off after a while (here 0.2 s), with an error saying so;
    a client silent between messages stays connected however long."""
    monkeypatch.setattr(jsonrpc, "STALLED_MESSAGE_SECONDS", 0.2)

    async def scenario() -> tuple[bytes, bool, bytes]:
        served, (stalled, idle), _ = await _serve(_dispatcher())
        stalled.sendall(b'{"jsonrpc":"2.0","id":1,"method":"daemon/st')
        said = await _line(stalled)
        closed = await _closed(stalled)
        idle.sendall(b'{"jsonrpc":"2.0","id":2,"method":"daemon/status"}\n')  # silent until now
        answer = await _line(idle)
        idle.close()
        stalled.close()
        await asyncio.gather(*served, return_exceptions=True)
        return said, closed, answer

    said, closed, answer = asyncio.run(scenario())
    error = json.loads(said)["error"]
    assert (
        error["code"] == -32600
        and "unfinished" in error["message"]
        and "connection closed" in error["message"]
    )
    assert closed
    assert json.loads(answer) == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_long_messages_take_turns_and_all_are_answered() -> None:
    """Messages longer than one read are received a few at a time (here one), each client's
    turn given back once its message is complete: all are answered, none waits for good."""
    permits = asyncio.Semaphore(1)  # made outside the loop, as the daemon makes its own

    async def scenario() -> list[bytes]:
        served, ends, _ = await _serve(_dispatcher(), clients=3, long_messages=permits)
        frames = [
            json.dumps(
                {"jsonrpc": "2.0", "id": n, "method": "daemon/status", "params": {"x": "a" * 300_000}}
            ).encode()
            + b"\n"
            for n in range(3)
        ]
        sent = [0, 0, 0]
        answers = [b"", b"", b""]
        for _ in range(_LOOKS):  # a deadlock fails the test rather than hang it
            if all(answer.endswith(b"\n") for answer in answers):
                break
            for n, end in enumerate(ends):
                if sent[n] < len(frames[n]):  # a piece at a time, each client in turn
                    with contextlib.suppress(BlockingIOError):
                        sent[n] += end.send(frames[n][sent[n] : sent[n] + 50_000])
                with contextlib.suppress(BlockingIOError):
                    answers[n] += end.recv(1 << 20)
            await asyncio.sleep(0.01)
        for end in ends:
            end.close()
        await asyncio.gather(*served, return_exceptions=True)
        return answers

    answers = asyncio.run(scenario())
    assert sorted(json.loads(answer)["id"] for answer in answers) == [0, 1, 2]
    assert not permits.locked(), "every turn was given back"


class _CountedSet(set):  # type: ignore[type-arg]
    looks = 0

    def __iter__(self) -> Any:
        _CountedSet.looks += 1
        return super().__iter__()


def test_what_waits_for_all_clients_is_a_running_total() -> None:
    """Summed over every client at each message posted, a notification to a thousand clients cost
    a million additions (20 commits with 3000 idle clients: 23 s). The total kept equals the
    sum, and posting looks at the clients only to cut one off."""

    async def scenario() -> tuple[list[tuple[int, int]], int]:
        backlogs = Backlogs(limit=4 * MIB)
        backlogs.connections = _CountedSet()
        served, ends, connections = await _serve(_dispatcher(), clients=3, backlogs=backlogs)
        await asyncio.sleep(0)  # each has joined
        seen = []
        looks = 0  # at every client, while posting (not those of the test's own sums)
        for n in range(40):
            before = _CountedSet.looks
            connections[n % 3].notify("sessions/changed", Empty())
            looks += _CountedSet.looks - before
            seen.append((backlogs.waiting, sum(c.waiting for c in backlogs.connections)))
        for end in ends:
            end.close()
        await asyncio.gather(*served, return_exceptions=True)
        seen.append((backlogs.waiting, 0))
        return seen, looks

    seen, looks = asyncio.run(scenario())
    for kept, summed in seen:
        assert kept == summed
    assert looks == 0, "posting looked at every client"


def test_clients_past_the_cap_are_told_and_closed(tmp_path: Path) -> None:
    """A client holding 260 connections to a daemon allowed 256 descriptors left nobody able to
    connect. Past the cap (here 2), a new client gets one line saying so, and its connection is
    closed; those connected are served."""
    home = Home(tmp_path / "home")
    home.ensure_layout()
    daemon = Daemon(home, RunningSettings(home))
    daemon.max_connections = 2
    path = str(tmp_path / "s.sock")

    async def scenario() -> tuple[list[bytes], bytes, bool]:
        server = await asyncio.start_unix_server(daemon._connection, path=path)
        held = []
        for _ in range(2):
            client = socket.socket(socket.AF_UNIX)
            client.connect(path)
            client.setblocking(False)
            held.append(client)
        while len(daemon.connections) < 2:
            await asyncio.sleep(0.01)
        extra = socket.socket(socket.AF_UNIX)
        extra.connect(path)
        # Sent before the refusal is read, as a client's hello is: the line still comes first.
        extra.sendall(b'{"jsonrpc":"2.0","id":9,"method":"memory/readGlobal"}\n')
        extra.setblocking(False)
        refusal = await _line(extra)
        closed = await _closed(extra)
        answers = []
        for n, client in enumerate(held):
            client.sendall(b'{"jsonrpc":"2.0","id":%d,"method":"memory/readGlobal"}\n' % n)
            answers.append(await _line(client))
        for client in (*held, extra):
            client.close()
        server.close()
        for task in list(daemon._serving):
            task.cancel()
        await asyncio.sleep(0)
        daemon.services.close()
        return answers, refusal, closed

    answers, refusal, closed = asyncio.run(scenario())
    assert [json.loads(answer)["id"] for answer in answers] == [0, 1]
    assert all("result" in json.loads(answer) for answer in answers)
    error = json.loads(refusal)["error"]
    assert error["code"] == -32600 and "serves 2 connections at once" in error["message"], error
    assert closed


def test_failed_accepts_are_logged_once_with_a_count(caplog: pytest.LogCaptureFixture) -> None:
    """Out of descriptors, asyncio logged a traceback for every accept retried: 24 MB in 25 s."""
    handler = process.AcceptFailures()
    loop = asyncio.new_event_loop()
    try:
        context = {"message": handler.MESSAGE, "exception": OSError(24, "Too many open files")}
        with caplog.at_level(logging.INFO):
            for _ in range(1000):
                handler(loop, context)
            handler(loop, {"message": "something else"})
    finally:
        loop.close()
    ours = [r for r in caplog.records if "cannot accept" in r.getMessage()]
    assert len(ours) == 1 and "Too many open files" in ours[0].getMessage()
    assert handler.unsaid == 999
    assert any(r.getMessage() == "something else" for r in caplog.records), "others go to asyncio's handler"


def test_the_descriptor_limit_is_raised_towards_the_hard_one() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = min(256, soft)
    resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
    try:
        raised = process.raise_descriptor_limit()
        wanted = process.DESCRIPTORS_WANTED
        assert raised == (wanted if hard == resource.RLIM_INFINITY else min(hard, wanted))
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == raised
        assert process.connection_cap() == max(16, min(process.MAX_CONNECTIONS, raised // 2))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_long_message_trickled_in_loses_its_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each byte restarted the stall timer: a client sending a long message a byte at a time
    kept its long-message permit for good (16 of them starved every other long message). A
    message holding a permit must be whole in time (here 0.3 s); the permit goes to the next."""
    monkeypatch.setattr(jsonrpc, "STALLED_MESSAGE_SECONDS", 30.0)
    monkeypatch.setattr(jsonrpc, "LONG_MESSAGE_SECONDS", 0.3)
    permits = asyncio.Semaphore(1)

    async def scenario() -> tuple[bytes, bool, bytes]:
        served, (trickler, waiting), _ = await _serve(_dispatcher(), long_messages=permits)
        trickler.sendall(b'{"jsonrpc":"2.0","id":1,"method":"daemon/status","params":{"x":"' + b"a" * 100_000)
        await asyncio.sleep(0.05)  # not a timing assertion: the trickler takes the permit first
        frame = {"jsonrpc": "2.0", "id": 2, "method": "daemon/status", "params": {"x": "b" * 100_000}}
        waiting.sendall(json.dumps(frame).encode() + b"\n")
        said = b""
        for _ in range(200):  # a byte now and then, far longer than its time
            try:
                trickler.send(b"a")
            except OSError:
                break
            said += await _line(trickler) if not said else b""
            if said:
                break
            await asyncio.sleep(0.02)
        closed = await _closed(trickler)
        answer = await _line(waiting)
        for end in (trickler, waiting):
            end.close()
        await asyncio.gather(*served, return_exceptions=True)
        return said, closed, answer

    said, closed, answer = asyncio.run(scenario())
    error = json.loads(said)["error"]
    assert error["code"] == -32600 and "a long message took more than 0 s to arrive" in error["message"]
    assert closed and json.loads(answer)["id"] == 2
