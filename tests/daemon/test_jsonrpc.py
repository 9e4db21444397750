"""The dispatcher never fails on any frame: every input gets a well-formed answer or none."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import socket
import tracemalloc
import weakref
from collections import deque
from typing import ClassVar

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, model_serializer

from remem.daemon.home import Home
from remem.daemon.protocol.rpc import INTERNAL_ERROR, INVALID_PARAMS, MAX_MESSAGE_BYTES, METHODS
from remem.daemon.server.jsonrpc import Backlogs, Connection, Dispatcher
from remem.daemon.server.process import Daemon
from remem.daemon.server.running_settings import RunningSettings

# Any code point, lone surrogates included: JSON escapes them ("\ud800"), and editors send them.
_TEXT = st.characters(blacklist_categories=())
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(_TEXT, max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(_TEXT, max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
_METHODS = st.sampled_from([
    "daemon/hello", "daemon/status", "memory/readGlobal", "memory/readWorkspace", "memory/commitWorkspace",
    "memory/replaceGlobal", "memory/context", "sessions/list", "sessions/turns", "sessions/fork", "x", "",
]) | st.text(max_size=10)  # fmt: skip
_REQUESTS = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", 2]), "method": _METHODS},
    optional={"id": st.none() | st.integers() | st.text(max_size=5) | st.lists(st.integers(), max_size=2),
              "params": _JSON},
)  # fmt: skip
_FRAMES = st.one_of(
    st.binary(max_size=200),
    _JSON.map(lambda v: json.dumps(v).encode()),
    _REQUESTS.map(lambda v: json.dumps(v).encode()),
)


def answer(daemon: Daemon, frame: bytes) -> dict | None:  # type: ignore[type-arg]
    encoded = asyncio.run(daemon.dispatcher.handle(frame))
    if encoded is None:
        return None
    assert encoded.endswith(b"\n") and encoded.count(b"\n") == 1, "one line per answer"
    return json.loads(encoded)  # type: ignore[no-any-return]


@settings(max_examples=300, deadline=None)
@given(frame=_FRAMES)
def test_any_frame_gets_a_well_formed_answer(tmp_path_factory: object, frame: bytes) -> None:
    home = Home(tmp_path_factory.mktemp("home"))  # type: ignore[attr-defined]
    daemon = Daemon(home, RunningSettings(home))
    reply = answer(daemon, frame)
    if reply is None:
        return  # a valid notification
    assert reply["jsonrpc"] == "2.0" and set(reply) in (
        {"jsonrpc", "id", "result"},
        {"jsonrpc", "id", "error"},
    )
    assert reply["id"] is None or isinstance(reply["id"], (int, str))
    if "error" in reply:
        assert isinstance(reply["error"]["code"], int) and reply["error"]["message"]
        assert reply["error"]["code"] != -32603, "no input may reach an internal error"


def test_a_nesting_bomb_is_a_parse_error(tmp_path_factory: object) -> None:
    home = Home(tmp_path_factory.mktemp("home"))  # type: ignore[attr-defined]
    daemon = Daemon(home, RunningSettings(home))
    for bomb in (
        b"[" * 100_000,
        b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"a": ' + b"[" * 100_000,
    ):
        reply = answer(daemon, bomb)
        assert reply is not None and reply["error"]["code"] == -32700, reply
        assert "nested too deeply" in reply["error"]["message"]


def test_a_notification_is_never_answered_and_a_boolean_is_no_id(tmp_path_factory: object) -> None:
    home = Home(tmp_path_factory.mktemp("home"))  # type: ignore[attr-defined]
    daemon = Daemon(home, RunningSettings(home))
    for failing in ({"method": "nope"}, {"method": "daemon/hello", "params": {}}):  # JSON-RPC 2.0
        assert answer(daemon, json.dumps({"jsonrpc": "2.0", **failing}).encode()) is None, failing
    reply = answer(daemon, b'{"jsonrpc": "2.0", "id": true, "method": "daemon/status"}')
    assert reply is not None and reply["id"] is None and reply["error"]["code"] == -32600


def test_a_lone_surrogate_is_refused_naming_its_field(tmp_path_factory: object) -> None:
    """No file, path or answer can hold it; it used to fail deep in a handler (`internal error`)."""
    home = Home(tmp_path_factory.mktemp("home"))  # type: ignore[attr-defined]
    daemon = Daemon(home, RunningSettings(home))
    put = {"op": "put", "name": "a\udfff", "content": "x"}
    commit = {"cwd": "/w", "expectedRevision": "x", "changes": [put]}
    requests = {
        "content": ("memory/replaceGlobal", {"content": "bad \ud800 text\n", "expectedRevision": "x"}),
        "changes.0.name": ("memory/commitWorkspace", commit),
        "cwd": ("sessions/list", {"cwd": "/w/\ud800"}),
        "a\\udc80": ("daemon/status", {"a\udc80": 1}),  # the key, shown escaped
    }  # fmt: skip
    for field, (method, params) in requests.items():
        frame = json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).encode()
        reply = answer(daemon, frame)
        assert reply is not None and reply["error"]["code"] == -32602, (method, reply)
        assert reply["error"]["message"].startswith(f"invalid params for {method}: {field} holds a lone")
    # Written raw (UTF-8's encoding of a surrogate, which UTF-8 forbids) or in UTF-16, it is no
    # message at all; `json.loads` of the bytes let both through.
    frame = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "memory/replaceGlobal", "params": {}})
    raw = frame.replace('"params": {}', '"params": {"content": "bad \ud800", "expectedRevision": "x"}')
    for encoded in (raw.encode("utf-8", "surrogatepass"), frame.encode("utf-16")):
        reply = answer(daemon, encoded)
        assert reply is not None and reply["error"]["code"] == -32700, reply
        assert reply["error"]["message"].startswith("not UTF-8 text")
    # A pair is one character, however it is written ("\ud83d\ude00" is a smile), and an escaped
    # backslash before "ud800" is text.
    for text in ("smile \U0001f600", "a backslash: \\ud800"):
        params = {"cwd": f"/w/{text}"}
        frame = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "sessions/list", "params": params}).encode()
        assert b"\\ud" in frame
        reply = answer(daemon, frame)
        assert reply is not None and "result" in reply, reply


class _Unencodable(BaseModel):
    text: str


def test_a_result_json_cannot_hold_is_answered_as_an_internal_error() -> None:
    """A result holding a lone surrogate (no UTF-8 can) once left its request unanswered, and
    the client waiting for good; it is an internal error, the connection still answering."""

    async def unencodable(params: object) -> BaseModel:
        return _Unencodable(text="half an emoji \ud83d")

    dispatcher = Dispatcher(dict.fromkeys(METHODS, unencodable), MAX_MESSAGE_BYTES)
    frame = b'{"jsonrpc":"2.0","id":7,"method":"daemon/status"}'
    reply = json.loads(asyncio.run(dispatcher.handle(frame)) or b"null")
    assert reply == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": INTERNAL_ERROR, "message": "internal error; see the daemon log"},
    }


class _Large(BaseModel):
    text: str


def test_clients_together_have_no_more_waiting_than_the_daemon_keeps() -> None:
    """Each client's backlog was bounded alone (64 MiB): sixteen that never read held over
    600 MB. Past the bound of them all, the one with the most waiting is cut off, and a client
    that reads is still answered."""
    answer = _Large(text="x" * (1 << 20))  # 1 MiB an answer

    async def large(params: BaseModel) -> BaseModel:
        return answer

    async def scenario() -> tuple[int, bytes, bool]:
        dispatcher = Dispatcher(dict.fromkeys(METHODS, large), 64 << 20)
        backlogs = Backlogs(limit=6 << 20)
        served, ends = [], []
        for _ in range(2):
            ours, theirs = socket.socketpair()
            theirs.setblocking(False)
            reader, writer = await asyncio.open_connection(sock=ours)
            served.append(asyncio.create_task(Connection(reader, writer, dispatcher, backlogs).serve()))
            ends.append(theirs)
        stuck, reading = ends
        request = b'{"jsonrpc":"2.0","id":1,"method":"daemon/status"}\n'
        stuck.sendall(request * 12)  # 12 MiB of answers, none read
        await asyncio.sleep(1)
        held = sum(c.waiting for c in backlogs.connections)
        reading.sendall(request)
        got = b""
        while not got.endswith(b"\n"):
            await asyncio.sleep(0.01)
            with contextlib.suppress(BlockingIOError):
                got += reading.recv(1 << 20)
        cut = False
        for _ in range(500):  # what reached its socket before the cut, then its end
            try:
                cut = stuck.recv(1 << 22) == b""
            except BlockingIOError:
                await asyncio.sleep(0.01)
            except ConnectionError:
                cut = True
            if cut:
                break
        for end in ends:
            end.close()
        await asyncio.gather(*served, return_exceptions=True)
        return held, got, cut

    held, got, cut = asyncio.run(scenario())
    assert held <= 6 << 20 and cut, (held, cut)
    assert json.loads(got)["result"]["text"] == "x" * (1 << 20)


class _Counted(BaseModel):
    text: str
    encodings: ClassVar[list[str]] = []

    @model_serializer
    def _encode(self) -> dict[str, str]:
        _Counted.encodings.append(self.text[:8])
        return {"text": self.text}


def _serving(results: list[BaseModel]) -> Dispatcher:
    """A dispatcher answering every request with the next of `results`, each let go once given."""
    given = deque(results)
    results.clear()

    async def next_result(params: object) -> BaseModel:
        return given.popleft()

    return Dispatcher(dict.fromkeys(METHODS, next_result), 64 << 20)


_STATUS = b'{"jsonrpc":"2.0","id":1,"method":"daemon/status"}'


def test_a_result_given_again_is_encoded_once() -> None:
    kept = _Counted(text="a listing kept between requests")
    dispatcher = _serving([kept, kept, _Counted(text="another"), kept])
    answers = [asyncio.run(dispatcher.handle(_STATUS)) for _ in range(4)]
    assert len(set(answers)) == 2 and _Counted.encodings == ["a listin", "another"]


def test_no_answer_is_held_once_it_is_sent() -> None:
    """Every result was kept with its JSON text (the last 16): a few `sessions show` of a
    transcript holding a 30 MB prompt kept the daemon above a gigabyte."""
    one_off = _Large(text="x" * (4 << 20))
    gone = weakref.ref(one_off)
    large_and_kept = _Large(text="y" * (20 << 20))  # still kept by someone: its text is not
    dispatcher = _serving([one_off, large_and_kept])
    del one_off
    tracemalloc.start()
    try:
        asyncio.run(dispatcher.handle(_STATUS))
        asyncio.run(dispatcher.handle(_STATUS))
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert gone() is None, "a result shown once is not kept alive"
    assert held < 4 << 20, f"{held} bytes held after the answers were sent"


def test_a_cwd_holding_nul_is_refused_and_no_workspace_is_made(tmp_path: object) -> None:
    home = Home(tmp_path / "home")  # type: ignore[operator]
    daemon = Daemon(home, RunningSettings(home))
    frame = json.dumps(
        {"jsonrpc": "2.0", "id": 3, "method": "memory/readWorkspace", "params": {"cwd": "/tmp/a\u0000b"}}
    ).encode()
    reply = answer(daemon, frame)
    assert reply is not None and reply["error"]["code"] == INVALID_PARAMS
    assert reply["error"]["data"] == [
        {"field": "cwd", "message": "Value error, cwd holds a NUL character, which no path can"}
    ]
    assert not home.workspaces.exists() or list(home.workspaces.iterdir()) == []
