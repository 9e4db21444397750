"""What one client's input can cost the daemon is bounded: invalid params are said by their first
problems, every error fits the answer cap, a long message is checked off the event loop, and a
broadcast costs no more per client the more there are."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import threading
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, model_validator

from remem.daemon.protocol.rpc import METHODS, CommitWorkspaceParams, Empty
from remem.daemon.server import jsonrpc
from remem.daemon.server.jsonrpc import Backlogs, Connection, Dispatcher

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
