"""JSON-RPC 2.0 over newline-delimited JSON: validating, dispatching, answering, never crashing.

Every malformed, oversized or hostile message gets the matching JSON-RPC error (or, when the
stream itself is broken, a closed connection); nothing a client sends can stop the daemon.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import select
import sys
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import BaseModel, ValidationError

from ..fsutil import Unwritable, is_refused_write
from ..home import HomeUnusable
from ..locks import LockRefused, LockUnusable
from ..protocol.api import Handler
from ..protocol.rpc import (
    ANSWER_TOO_LARGE,
    HOME_UNUSABLE,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_MESSAGE_BYTES,
    METHOD_NOT_FOUND,
    METHODS,
    PARSE_ERROR,
    UNWRITABLE,
    RpcError,
)

WRITE_TIMEOUT_SECONDS = 10.0
# Requests of one client under way at once, each until its answer is handed to the socket;
# more wait to be read. So what one client's answers hold is bounded by their number, not
# their bytes: a bound in bytes cut off a client reading three 38 MiB transcripts it asked for.
MAX_IN_FLIGHT = 16
# Bytes of notifications that may wait for a client before it counts as stuck and is cut off,
# where a bound on the number of messages alone let a client that never reads pin a gigabyte.
OUTBOX_BYTES = MAX_IN_FLIGHT * MAX_MESSAGE_BYTES
# Small notifications cost more in bookkeeping than in bytes: their number is bounded too.
OUTBOX_MESSAGES = 1024
# What all of a daemon's clients together may have waiting: each client's bound alone let
# sixteen that never read hold over 600 MB.
BACKLOG_BYTES = 4 * OUTBOX_BYTES
ENCODED_RESULTS = 16  # recent results kept with their JSON text
# ... and only while the results live elsewhere (a kept listing) and their texts are this small:
# every result was kept, a transcript of 30 MB too, so a few `sessions show` held a gigabyte.
ENCODED_ENTRY_BYTES = 16 << 20
ENCODED_TOTAL_BYTES = 32 << 20
# JSON may escape a lone UTF-16 surrogate ("\ud800"), which no UTF-8 file, path or answer can
# hold; a pair decodes to one character, so a surrogate left in a decoded string is lone.
_SURROGATE = re.compile("[\ud800-\udfff]")
LONE_SURROGATE = "holds a lone UTF-16 surrogate (\\ud800 without its pair), which UTF-8 cannot encode"
# Invalid params are said by their first problems: a 4 MiB list of two million wrong items
# made pydantic list two million (7 s and gigabytes on the event loop), sent as a 225 MB error.
MAX_PROBLEMS = 20
PROBLEM_CHARS = 200  # of a problem's field and of its message; a key may be megabytes long
ERROR_MESSAGE_CHARS = 1000  # of an error's message, when the whole error is over the answer cap
# A message longer than this has its params checked in a thread of its own, one at a time, so
# that however it is made, its validation never holds up the event loop (other clients), and
# two of them never take twice the memory (decision 0404).
OFF_LOOP_BYTES = 64 * 1024
# How long a message may stay unfinished without a byte more: a client that sent part of one
# and went silent held up to 4 MiB for good, and 250 of them a gigabyte (decision 0405).
STALLED_MESSAGE_SECONDS = 30.0
# A message holding one of the long-message permits must be whole within this (4 MiB at 35 KB/s):
# a client trickling a byte at a time kept its permit for good, and 16 of them starved every
# other long message.
LONG_MESSAGE_SECONDS = 120.0
READ_CHUNK = 64 * 1024  # what one read takes from a socket at most
# Messages longer than one read received at once, by all clients together: with up to 4 MiB
# each, 64 MiB; a client past them waits, what it sends kept in its socket (decision 0405).
LONG_MESSAGES = 16
# Requests of the methods whose answers grow with a whole session (a transcript), run by all
# clients together, each until its answer is encoded: one of a 40 MB session
# peaks at some 350 MB, and sixteen at once took gigabytes (decision 0522).
HEAVY_AT_ONCE = 2
log = logging.getLogger("remem.daemon")


class ClientGone(Exception):
    """The client that asked closed its connection: its request is not run."""


class Ticket:
    """One request of a client: whether that client is `gone`, and the permits the request
    holds: its client's slot until its answer is handed to the socket or dropped, so what waits
    for a client is bounded by the answers it may have under way; a heavy method's turn until
    its answer is encoded."""

    def __init__(self, gone: Callable[[], bool] = lambda: False) -> None:
        self.gone = gone
        self._permits: list[asyncio.Semaphore] = []

    def hold(self, permit: asyncio.Semaphore) -> None:
        self._permits.append(permit)

    def give_back(self, permit: asyncio.Semaphore) -> None:
        """Give back `permit` alone, if held."""
        if permit in self._permits:
            self._permits.remove(permit)
            permit.release()

    def release(self) -> None:
        """Give back the permits held; each once."""
        while self._permits:
            self._permits.pop().release()


class Dispatcher:
    def __init__(
        self, handlers: dict[str, Handler], max_answer_bytes: int, heavy: Collection[str] = ()
    ) -> None:
        assert set(handlers) == set(METHODS), "every protocol method has exactly one handler"
        self._handlers = handlers
        self._max_answer_bytes = max_answer_bytes
        self._heavy_methods = frozenset(heavy)
        self._heavy = asyncio.Semaphore(HEAVY_AT_ONCE)  # shared by all clients: see HEAVY_AT_ONCE
        # Results given again (a snapshot the cache proved unchanged, a kept listing) are encoded
        # once: for 200 records, encoding costs ten times what answering from the cache does.
        # Held weakly: a result nothing else keeps (a transcript shown once) is given again never.
        self._encoded: OrderedDict[int, tuple[weakref.ref[BaseModel], bytes]] = OrderedDict()
        self._validating = ThreadPoolExecutor(1, thread_name_prefix="remem-validate")

    async def handle(self, line: bytes, ticket: Ticket | None = None) -> bytes | None:
        """The encoded response line to one message, or None for a notification or when its
        client is gone. A heavy method's permit stays held in `ticket` for the caller to give
        back once the answer is handed on; without a ticket it is given back here."""
        if ticket is None:
            own = Ticket()
            try:
                return await self.handle(line, own)
            finally:
                own.release()
        try:
            answer = await self._handle(line, ticket)
        except ClientGone:
            return None
        finally:
            # A heavy method's turn ends with its answer encoded: what made the answer is gone,
            # and the answer is bounded by its client's requests under way. Held until the
            # client read it, one reading slowly held every other client's transcript.
            ticket.give_back(self._heavy)
        if answer is not None and len(answer) > self._max_answer_bytes:
            # An error is bounded as a result is: a client buffers either whole.
            return _shortened(answer, self._max_answer_bytes)
        return answer

    async def _handle(self, line: bytes, ticket: Ticket) -> bytes | None:
        try:
            # Decoded strictly first: `json.loads` of bytes guesses UTF-16 or 32 and lets an
            # encoded lone surrogate through, which the escape check below would not see.
            message = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            return _error(None, RpcError(PARSE_ERROR, f"not UTF-8 text: {exc}"))
        except ValueError as exc:
            return _error(None, RpcError(PARSE_ERROR, f"not valid JSON: {exc}"))
        except RecursionError:  # a nesting bomb: "[[[[…" a few thousand levels deep
            return _error(None, RpcError(PARSE_ERROR, "not valid JSON here: nested too deeply"))
        request_id = message.get("id") if isinstance(message, dict) else None
        try:
            method, params = _request_parts(message)
            escaped = b"\\ud" in line or b"\\uD" in line
            result = await self._call(method, params, escaped, len(line) > OFF_LOOP_BYTES, ticket)
        except ClientGone:  # nobody to answer: not an error of the handler's
            raise
        except RpcError as exc:
            return None if _is_notification(message) else _error(request_id, exc)
        except (HomeUnusable, LockUnusable) as exc:
            # Something in the home stands in the way (a link, a folder for a lock file): no bug,
            # but what the user must fix, said as the CLI says it without the daemon.
            log.warning("%s", exc)
            return None if _is_notification(message) else _error(request_id, _unusable(exc))
        except Unwritable as exc:  # a full disk: no bug either, and the next request may find room
            log.warning("%s failed: %s", message.get("method"), exc)
            return None if _is_notification(message) else _error(request_id, unwritable(exc))
        except Exception:  # a bug in a handler must not take the daemon down
            log.exception("%s failed", message.get("method"))
            return None if _is_notification(message) else _error(request_id, _internal())
        if "id" not in message:
            return None
        try:
            encoded = self._encode_result(result)
        except Exception:  # a result JSON cannot hold: its client must still get an answer
            log.exception("%s's result could not be encoded", method)
            return _error(request_id, _internal())
        head = json.dumps({"jsonrpc": "2.0", "id": request_id}, separators=(",", ":")).encode()
        answer = b"".join((head[:-1], b',"result":', encoded, b"}\n"))
        if len(answer) > self._max_answer_bytes:
            # Refused here, not cut off by the client's buffer: the connection stays usable.
            return _error(request_id, _too_large(method, len(answer), self._max_answer_bytes))
        return answer

    def _encode_result(self, result: BaseModel) -> bytes:
        # Keyed by identity and checked through the weak reference: a key whose result is gone
        # may name another result now, which the reference tells apart.
        held = self._encoded.get(id(result))
        if held is not None and held[0]() is result:
            self._encoded.move_to_end(id(result))
            return held[1]
        text = result.__pydantic_serializer__.to_json(result)
        for key in [key for key, (ref, _) in self._encoded.items() if ref() is None]:
            del self._encoded[key]  # their texts go with them, at the latest here
        if len(text) <= ENCODED_ENTRY_BYTES:
            self._encoded[id(result)] = (weakref.ref(result), text)
        total = sum(len(kept) for _, kept in self._encoded.values())
        while len(self._encoded) > ENCODED_RESULTS or total > ENCODED_TOTAL_BYTES:
            total -= len(self._encoded.popitem(last=False)[1][1])
        return text

    async def _call(
        self, method: str, params: Any, escaped: bool, off_loop: bool, ticket: Ticket
    ) -> BaseModel:
        """`method`'s result; `escaped` when the message holds a surrogate's escape, so its
        params are searched for a lone one (a handler would fail on it far from here);
        `off_loop` when the message is long enough for its params to be checked in a thread.
        A heavy method runs once it holds a permit, and not at all if its client left
        meanwhile: a client that sent sixteen transcripts and closed had them all rendered."""
        spec = METHODS.get(method)
        if spec is None:
            raise RpcError(METHOD_NOT_FOUND, f"unknown method {_cut(repr(method), PROBLEM_CHARS)}")
        if off_loop:
            loop = asyncio.get_running_loop()
            parsed = await loop.run_in_executor(
                self._validating, parse_params, method, spec.params, params, escaped, True
            )
        else:
            parsed = parse_params(method, spec.params, params, escaped)
        if method in self._heavy_methods:
            await self._heavy.acquire()
            ticket.hold(self._heavy)
            if ticket.gone():
                raise ClientGone
        return await self._handlers[method](parsed)


def parse_params(
    method: str, model: type[BaseModel], params: Any, escaped: bool, long: bool = False
) -> BaseModel:
    """`params` as `model`, or INVALID_PARAMS naming at most `MAX_PROBLEMS` problems (field and
    what is wrong) and how many there are. For a `long` message (seconds of work when it is
    made to fail everywhere), the first items of each list and object are checked first: when
    they fail, their problems are said without looking further."""
    if escaped and (field := _lone_surrogate_at(params)) is not None:
        field = _cut(field, PROBLEM_CHARS)
        problem = {"field": field, "message": LONE_SURROGATE}
        raise RpcError(INVALID_PARAMS, f"invalid params for {method}: {field} {LONE_SURROGATE}", [problem])
    params = {} if params is None else params
    if long:
        # A message of two million wrong items is refused by its first ones, at no cost.
        early = _problems_among_first(model, params, MAX_PROBLEMS)
        if early:
            raise _invalid(method, early, None)
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        count = exc.error_count()
        # Only the first of many: listing them all cost seconds and gigabytes.
        problems = _problems(exc, set()) if count <= MAX_PROBLEMS else _first_problems(model, params)
        raise _invalid(method, problems, count) from None


def _invalid(method: str, problems: list[dict[str, str]], count: int | None) -> RpcError:
    if count is None:
        said = f"invalid params for {method}: its first {len(problems)} problems (more are not looked for)"
    elif count > len(problems):
        said = f"invalid params for {method}: {count} problems, the first {len(problems)} of them listed"
    else:
        said = f"invalid params for {method}"
    return RpcError(INVALID_PARAMS, said, problems)


def _problems(exc: ValidationError, cut: set[tuple[Any, ...]]) -> list[dict[str, str]]:
    """The first `MAX_PROBLEMS` of `exc`'s problems, leaving out what cutting the containers at
    `cut` made up (a list too short, a field missing)."""
    problems = []
    for error in exc.errors(include_url=False, include_context=False, include_input=False):
        loc = tuple(error["loc"])
        if error["type"] == "too_short" and loc in cut or error["type"] == "missing" and loc[:-1] in cut:
            continue
        field = _cut(".".join(map(str, loc)), PROBLEM_CHARS)
        problems.append({"field": field, "message": _cut(error["msg"], PROBLEM_CHARS)})
        if len(problems) == MAX_PROBLEMS:
            break
    return problems


def _problems_among_first(model: type[BaseModel], params: Any, first: int) -> list[dict[str, str]]:
    """The problems of `params` with every list and object cut to its `first` items, but for
    what the cut made up; none when nothing was cut."""
    cut: set[tuple[Any, ...]] = set()
    pruned = _pruned(params, first, (), cut)
    if not cut:
        return []
    try:
        model.model_validate(pruned)
    except ValidationError as exc:
        return _problems(exc, cut)
    return []


def _first_problems(model: type[BaseModel], params: Any) -> list[dict[str, str]]:
    """The first `MAX_PROBLEMS` problems of `params`, which has more: looked for among the
    first items of each list and object, four times more each round, never all at once."""
    first = 2 * MAX_PROBLEMS
    while True:
        cut: set[tuple[Any, ...]] = set()
        pruned = _pruned(params, first, (), cut)
        try:
            model.model_validate(pruned)
        except ValidationError as exc:
            problems = _problems(exc, cut)
            if len(problems) == MAX_PROBLEMS or not cut:
                return problems
        else:
            if not cut:
                return []
        first *= 4


def _pruned(value: Any, first: int, place: tuple[Any, ...], cut: set[tuple[Any, ...]]) -> Any:
    """`value` with every list and object cut to its first `first` items, the places cut
    added to `cut`; below `_PRUNED_DEPTH` left whole (no params go that deep, and a value that
    does fails above it, where pydantic stops)."""
    if len(place) >= _PRUNED_DEPTH:
        return value
    if isinstance(value, list):
        if len(value) > first:
            cut.add(place)
        return [_pruned(item, first, (*place, n), cut) for n, item in enumerate(value[:first])]
    if isinstance(value, dict):
        if len(value) > first:
            cut.add(place)
        items = list(value.items())[:first] if len(value) > first else value.items()
        return {key: _pruned(item, first, (*place, key), cut) for key, item in items}
    return value


_PRUNED_DEPTH = 16


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else f"{text[: chars - 1]}…"


def _shortened(answer: bytes, limit: int) -> bytes:
    """An error answer over `limit` as one that fits: its code and id, its message cut short,
    without its data."""
    message = json.loads(answer)
    error = message["error"]
    said = _cut(error["message"], ERROR_MESSAGE_CHARS)
    note = f" (the error's details are left out: {_mib(len(answer))} is more than daemon.max_answer_bytes)"
    shortened = {"code": error["code"], "message": said + note}
    encoded = _encode({"jsonrpc": "2.0", "id": message["id"], "error": shortened})
    if len(encoded) > limit:  # the request's own id is that long: it cannot be said back
        encoded = _encode({"jsonrpc": "2.0", "id": None, "error": shortened})
    return encoded


def _unusable(exc: HomeUnusable | LockUnusable) -> RpcError:
    """HOME_UNUSABLE; a lock file in the way also travels as its `path`, `reason` and whether the
    file system `refused` to lock it (LockRefused), so a client can say it as it says a
    LockUnusable met in its own process (the MCP server tells an agent of the lock file by its
    name alone, never the home's path, and asks for a local disk rather than the file removed)."""
    if isinstance(exc, LockUnusable):
        data = {"path": str(exc.path), "reason": exc.reason, "refused": isinstance(exc, LockRefused)}
        return RpcError(HOME_UNUSABLE, str(exc), data)
    return RpcError(HOME_UNUSABLE, str(exc))


def log_failed(what: str, exc: Exception) -> None:
    """Log that `what` failed with `exc`, for a task the daemon goes on after (a background
    settle, a reaction to a change): what a request would be answered in words of its own (a
    refusal, something in the home in the way, a write the file system refused: no bug, and
    tried again later) in one warning line naming it; anything else as an error with its
    traceback."""
    if (
        isinstance(exc, (RpcError, HomeUnusable, LockUnusable))
        or isinstance(exc, OSError)
        and is_refused_write(exc)
    ):
        log.warning("%s: %s", what, exc)
    else:
        log.error("%s failed", what, exc_info=exc)


def unwritable(exc: Unwritable) -> RpcError:
    """UNWRITABLE: the refusal's message, its folder and errno's name, for a client to tell a full
    disk from a read-only mount without reading the message."""
    return RpcError(UNWRITABLE, str(exc), {"path": str(exc.folder), "errno": exc.code})


def _internal() -> RpcError:
    return RpcError(INTERNAL_ERROR, "internal error; see the daemon log")


def _lone_surrogate_at(params: Any) -> str | None:
    """The dotted place of a key or string in `params` that holds a lone surrogate (a
    key's own surrogates written as escapes, so the error's text is UTF-8)."""
    pending: list[tuple[str, Any]] = [("", params)]
    while pending:
        place, value = pending.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return place or "params"
        elif isinstance(value, dict):
            for key, item in value.items():
                inner = f"{place}.{key}" if place else str(key)
                if _SURROGATE.search(key):
                    return inner.encode("utf-8", "backslashreplace").decode("utf-8")
                pending.append((inner, item))
        elif isinstance(value, list):
            pending.extend((f"{place}.{n}" if place else str(n), item) for n, item in enumerate(value))
    return None


def _request_parts(message: Any) -> tuple[str, Any]:
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'a request is an object with "jsonrpc": "2.0"')
    method = message.get("method")
    if not isinstance(method, str):
        raise RpcError(INVALID_REQUEST, '"method" must be a string')
    if "id" in message and not (message["id"] is None or _is_id(message["id"])):
        raise RpcError(INVALID_REQUEST, '"id" must be a number, a string or null')
    params = message.get("params")
    if params is not None and not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, '"params" must be an object')
    return method, params


def _is_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)  # True is an int in Python


def _is_notification(message: Any) -> bool:
    """A well-formed message without an id: never answered, even when it fails (JSON-RPC 2.0)."""
    return (
        isinstance(message, dict)
        and "id" not in message
        and message.get("jsonrpc") == "2.0"
        and isinstance(message.get("method"), str)
    )


def encode_error(request_id: Any, error: RpcError) -> bytes:
    """The encoded error answer line to a request of `request_id` (null when it is no id)."""
    return _error(request_id, error)


def _error(request_id: Any, error: RpcError) -> bytes:
    usable = request_id if _is_id(request_id) else None
    return _encode({"jsonrpc": "2.0", "id": usable, "error": error.to_json()})


def _too_big() -> RpcError:
    return RpcError(INVALID_REQUEST, f"message exceeds {MAX_MESSAGE_BYTES} bytes; connection closed")


def _too_large(method: str, size: int, limit: int) -> RpcError:
    return RpcError(
        ANSWER_TOO_LARGE,
        f"the answer to {method} is {_mib(size)}, more than the daemon sends in one message "
        f"(daemon.max_answer_bytes: {_mib(limit)})",
        {"bytes": size, "limit": limit},
    )


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"


class Connection:
    """One client. Its requests run concurrently (up to `MAX_IN_FLIGHT`), so a slow one never
    holds up the next; answers and notifications go through one queue and one writer, so a
    client that stops reading is cut off without blocking anyone else."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        dispatcher: Dispatcher,
        backlogs: Backlogs | None = None,
        long_messages: asyncio.Semaphore | None = None,
    ) -> None:
        self._reader, self._writer, self._dispatcher = reader, writer, dispatcher
        self._backlogs = backlogs
        self._long_messages = long_messages  # shared by the daemon's clients: see `_receive_all`
        # Answers with the ticket each holds, notifications without: bounded by `_post`.
        self._outbox: asyncio.Queue[tuple[bytes, Ticket | None] | None] = asyncio.Queue()
        self._waiting_bytes = 0  # in the outbox, not yet handed to the socket
        self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._requests: set[asyncio.Task[None]] = set()

    @property
    def waiting(self) -> int:
        """The bytes queued for this client, not yet handed to its socket."""
        return self._waiting_bytes

    async def serve(self) -> None:
        """Answer this client until it closes, breaks the framing or stops reading."""
        sender = asyncio.create_task(self._send_all())
        if self._backlogs is not None:
            self._backlogs.join(self)
        try:
            await self._receive_all()
            # A request under way runs to its end, even for a client gone: a handler in a thread
            # cannot be stopped (cancelled, it gave back its turn while it went on rendering),
            # and a write's own follow-ups (its announce) must not be cut off. What it sent
            # after is never run (`_receive_all`, `Dispatcher._call`).
            if self._requests:  # a half-closed client still gets its answers
                await asyncio.wait(self._requests)
            self._post(None)
            await sender
        finally:
            if self._backlogs is not None:
                self._backlogs.leave(self)
            for task in (sender, *self._requests):
                task.cancel()
            self._drop_waiting()
            self._writer.close()

    def notify(self, method: str, params: BaseModel) -> None:
        """Queue a notification; never blocks."""
        message = {"jsonrpc": "2.0", "method": method, "params": params.model_dump(mode="json")}
        self._post(_encode(message))

    async def _receive_all(self) -> None:
        """Read messages and start answering each, until the client closes its side, breaks
        the framing or leaves a message unfinished for `STALLED_MESSAGE_SECONDS`. A message
        longer than one read is received only with one of the daemon's `long_messages`
        permits, held until it is complete: what unfinished messages hold in all is bounded."""
        unfinished: list[bytes] = []  # the start of the next message
        held = 0  # bytes in `unfinished`
        permitted = False
        due = 0.0  # when a message holding a permit must be whole
        try:
            while not self._writer.is_closing():
                if held > READ_CHUNK and not permitted and self._long_messages is not None:
                    await self._long_messages.acquire()  # the client waits, its bytes in its socket
                    permitted = True
                    due = asyncio.get_running_loop().time() + LONG_MESSAGE_SECONDS
                chunk = await self._read(held, due if permitted else None)
                if not chunk:
                    return
                start = 0
                while (end := chunk.find(b"\n", start)) != -1:
                    if held + end - start > MAX_MESSAGE_BYTES:
                        self._post(_error(None, _too_big()))
                        return
                    line = b"".join((*unfinished, chunk[start : end + 1]))
                    unfinished, held, start = [], 0, end + 1
                    await self._slots.acquire()
                    if self._gone():  # it left while waiting for a slot: the rest it sent is not run
                        self._slots.release()
                        return
                    ticket = Ticket(self._gone)
                    ticket.hold(self._slots)
                    task = asyncio.create_task(self._answer(line, ticket))
                    self._requests.add(task)
                    task.add_done_callback(self._request_done)
                if start < len(chunk):
                    unfinished.append(chunk[start:])
                    held += len(chunk) - start
                    if held > MAX_MESSAGE_BYTES:
                        self._post(_error(None, _too_big()))
                        return
                if permitted and held <= READ_CHUNK:
                    permitted = False
                    self._long_messages.release()  # type: ignore[union-attr]
        finally:
            if permitted:
                self._long_messages.release()  # type: ignore[union-attr]

    async def _read(self, held: int, due: float | None) -> bytes:
        """The next bytes from the client, empty once it closed its side or stalled: `held`
        bytes of a message wait for their end, which must come on within
        `STALLED_MESSAGE_SECONDS`, and (a message holding a permit) be whole by `due` (the client
        is told so, and cut off)."""
        loop = asyncio.get_running_loop()
        wait = STALLED_MESSAGE_SECONDS if due is None else min(STALLED_MESSAGE_SECONDS, due - loop.time())
        try:
            if not held:  # between messages a client may be silent for as long as it likes
                return await self._reader.read(READ_CHUNK)
            return await asyncio.wait_for(self._reader.read(READ_CHUNK), max(0.0, wait))
        except asyncio.TimeoutError:
            if due is not None and loop.time() >= due:
                said = f"a long message took more than {LONG_MESSAGE_SECONDS:.0f} s to arrive"
            else:
                said = f"a message stayed unfinished (no newline) for {STALLED_MESSAGE_SECONDS:.0f} s"
            log.warning("a client's message (%s so far): %s; disconnecting it", _mib(held), said)
            self._post(_error(None, RpcError(INVALID_REQUEST, f"{said}; connection closed")))
            return b""
        except ConnectionError:
            return b""

    async def _answer(self, line: bytes, ticket: Ticket) -> None:
        posted = False
        try:
            response = await self._dispatcher.handle(line, ticket)
            if response is not None:
                self._post(response, ticket)
                posted = True
        finally:
            if not posted:
                ticket.release()

    def _request_done(self, task: asyncio.Task[None]) -> None:
        self._requests.discard(task)

    def _gone(self) -> bool:
        """Whether the client is cut off, or closed its connection both ways (POLLHUP): one
        that only closed its sending side (POLLRDHUP alone) still reads its answers."""
        if self._writer.is_closing():
            return True
        sock = self._writer.get_extra_info("socket")
        if sock is None or sys.platform != "linux":
            # Elsewhere (macOS) asking for POLLHUP may report a peer's end of writing as it: a
            # client gone both ways is then found as its answer fails to be written.
            return False
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLHUP)
        return any(event & select.POLLHUP for _, event in poller.poll(0))

    def _post(self, data: bytes | None, ticket: Ticket | None = None) -> None:
        """Queue `data` for the client: an answer with its `ticket`, given back once the answer
        is handed to the socket or dropped; a notification without one."""
        if data is None:
            self._outbox.put_nowait(None)  # the writer's cue to stop, which it must always get
        elif self._writer.is_closing():
            pass  # cut off or gone: nobody will read it, and a cut is reported once
        elif ticket is None and self._overflows(len(data)):
            # Only what the client did not ask for: its answers are bounded by its tickets, and
            # one that stops reading them is cut off by the write timeout.
            self.cut_off("a client does not read its messages")
        else:
            if self._backlogs is not None:
                self._backlogs.make_room(len(data))
            if not self._writer.is_closing():  # else it was the one cut off
                self._outbox.put_nowait((data, ticket))
                self._wait(len(data))
                return
        if ticket is not None:
            ticket.release()

    def _wait(self, size: int) -> None:
        """Count `size` more bytes (fewer when negative) waiting for this client, and in the
        daemon's total."""
        self._waiting_bytes += size
        if self._backlogs is not None and self in self._backlogs.connections:
            self._backlogs.waiting += size

    def cut_off(self, why: str) -> None:
        """Disconnect this client, dropping what waits for it."""
        log.warning("%s (%s wait for it): disconnecting it", why, _mib(self._waiting_bytes))
        self._writer.transport.abort()
        self._drop_waiting()
        self._outbox.put_nowait(None)

    def _drop_waiting(self) -> None:
        """Drop what waits for this client, giving back the answers' tickets."""
        while not self._outbox.empty():
            entry = self._outbox.get_nowait()
            if entry is not None and entry[1] is not None:
                entry[1].release()
        self._wait(-self._waiting_bytes)

    def _overflows(self, size: int) -> bool:
        if self._outbox.empty():
            return False  # an answer of any size the cap allows goes to a client that keeps up
        full = self._outbox.qsize() >= OUTBOX_MESSAGES
        return full or self._waiting_bytes + size > OUTBOX_BYTES

    async def _send_all(self) -> None:
        while (entry := await self._outbox.get()) is not None:
            data, ticket = entry
            self._wait(-len(data))
            try:
                self._writer.write(data)
                drained = await self._drained()
            finally:
                if ticket is not None:
                    ticket.release()
            if not drained:
                # A client that vanished or stopped reading loses only its own connection.
                self._writer.transport.abort()
                self._drop_waiting()
                return

    async def _drained(self) -> bool:
        """Wait until the socket took what was written; False when the client vanished, or
        took nothing for `WRITE_TIMEOUT_SECONDS` (it is cut off, and the log says so). A
        client still reading gets an answer however long it takes, even one of a GiB, if it
        reads fast enough for the kernel to take more within that time: the socket takes
        more only once its peer read about three quarters of its buffer (some 160 KiB on
        Linux), so a client slower than about 16 KiB/s counts as taking nothing."""
        transport = self._writer.transport
        left = transport.get_write_buffer_size()
        while True:
            try:
                await asyncio.wait_for(self._writer.drain(), WRITE_TIMEOUT_SECONDS)
                return True
            except ConnectionError:
                return False
            except asyncio.TimeoutError:  # not the builtin before Python 3.11
                waiting = transport.get_write_buffer_size()
                if waiting >= left:
                    # What the socket holds and what is queued behind it: all it is dropping.
                    log.warning("a client took nothing for %.0f s (%s wait for it): disconnecting it",
                                WRITE_TIMEOUT_SECONDS, _mib(waiting + self._waiting_bytes))  # fmt: skip
                    return False
                left = waiting


class Backlogs:
    """What waits for all of a daemon's clients together, bounded by `limit`: past it, the client
    with the most waiting (the one reading least) is cut off, as one past its own bound is.
    `waiting` is their total, kept as it changes: summed over every client at each message
    posted, a notification to a thousand clients cost a million additions."""

    def __init__(self, limit: int = BACKLOG_BYTES) -> None:
        self.limit = limit
        self.connections: set[Connection] = set()
        self.waiting = 0

    def join(self, connection: Connection) -> None:
        if connection not in self.connections:
            self.connections.add(connection)
            self.waiting += connection.waiting

    def leave(self, connection: Connection) -> None:
        if connection in self.connections:
            self.connections.discard(connection)
            self.waiting -= connection.waiting

    def make_room(self, size: int) -> None:
        while self.waiting + size > self.limit:
            stuck = max(self.connections, key=lambda c: c.waiting, default=None)
            if stuck is None or stuck.waiting == 0:
                return
            stuck.cut_off("the clients together have more waiting than the daemon keeps, this one most")


def _encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"
