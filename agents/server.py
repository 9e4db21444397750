"""`remem mcp`: the MCP server agents use to read and write memory, on stdio.

Built on the SDK's low-level `Server`, because every handler needs the request's context (the
client's roots decide the workspace, its name goes into the audit) and `memory_update` needs
its own closed schema and problem lists. Tools: `memory_context`, `memory_read`,
`memory_update`, and the read-only `memory_history`. Resources: `remem://context` (the same
text as `memory_context`, recording the same observation) and `remem://workspace/<name>` for
each record. Everything goes through the daemon (or, with `--no-daemon`, its handlers in this
process), except a context the session holds and its watch proves unchanged (`context_watch`).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import sys
import unicodedata
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.stdio import _claim_fd, _open_stdin_diversion, stdio_server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import BaseModel, ValidationError

from remem.daemon import __version__
from remem.daemon.cli.output import OutputUnwritable
from remem.daemon.credentials import log_to_stderr, redact
from remem.daemon.home import Home, HomeUnusable
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import HistoryEntry
from remem.daemon.settings import SettingsError, SettingsStore
from remem.daemon.validation import one_line

from .context_watch import ContextWatch
from .limits import UpdateBudget, call_seconds
from .link import MemoryLink, open_link
from .session import AgentSession, Refusal
from .tools import (
    CONTEXT,
    HISTORY,
    READ,
    TOOLS,
    UPDATE,
    ContextArguments,
    HistoryArguments,
    ReadArguments,
    argument_problems,
    problem,
    shown,
)
from .workspace import SessionWorkspace, StartFolderGone, read_roots_answer

if sys.version_info < (3, 11):
    from exceptiongroup import ExceptionGroup  # what anyio's task groups raise there

CONTEXT_URI = "remem://context"
RECORD_PREFIX = "remem://workspace/"
MARKDOWN = "text/markdown"
INSTRUCTIONS = (
    "remem keeps this user's long-term memory: Global memory (how the user works, across projects) "
    "and records about this project. Call memory_context at the start of a task and follow what it "
    "says; read a record with memory_read when its description matters for the task. When you learn "
    "something worth remembering, save it with memory_update; if memory changed meanwhile, load it "
    "again and redo the change."
)

# What the agent learns of a failure remem did not foresee: the exception may carry paths, so
# it goes to the server's log on stderr, for the user, never to the agent.
UNEXPECTED = (
    "remem failed unexpectedly; the details are in its MCP server's log, for the user. If this was "
    "memory_update, call memory_context before trying again: it may or may not have been applied."
)
NOT_A_RECORD_NAME = (
    "{uri} does not name a memory record ({problem}): a record resource is "
    "remem://workspace/<name>, with the name of one of this project's records, as memory_context's "
    "index and the resource list show them."
)
NOT_INITIALIZED = (
    "remem's MCP server answers {method} only after the handshake: send `initialize`, then "
    "`notifications/initialized`, first."
)

MAX_CLIENT_CHARS = 200
A = TypeVar("A", bound=BaseModel)
log = logging.getLogger("remem.agents")
ToolHandler = Callable[[AgentSession, str, dict[str, Any]], Awaitable[types.CallToolResult]]


def build_server(session: AgentSession, workspace: SessionWorkspace) -> Server:
    """The MCP server of one session (stdio: one client per process)."""
    handlers = _Handlers(session, workspace)
    server = Server(
        "remem",
        version=__version__,
        title="remem memory",
        instructions=INSTRUCTIONS,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_list_resource_templates=handlers.list_templates,
        on_read_resource=handlers.read_resource,
    )
    server.middleware.append(_say_what_is_invalid)
    server.middleware.append(read_roots_answer)
    return server


async def _say_what_is_invalid(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """The SDK refuses malformed params, and any request before the handshake, with the same bare
    "Invalid request parameters": a client (or its developer) cannot tell what to fix. Same code,
    with what is wrong; pydantic's own text, which quotes the input, stays off the wire."""
    try:
        return await call_next(ctx)
    except ValidationError as exc:
        if not exc.title.endswith(("Request", "Params")):  # one of remem's own models (a daemon answer)
            raise
        said = "; ".join(problem(error, "params") for error in exc.errors(include_url=False))
        raise MCPError(code=types.INVALID_PARAMS, message=f"Invalid params of {ctx.method}: {said}") from None
    except MCPError as exc:
        # The SDK's gate before `initialize` is the only INVALID_PARAMS it sends with empty data
        # (its params validation raises ValidationError, above).
        if exc.error.code == types.INVALID_PARAMS and exc.error.data == "":
            raise MCPError(
                code=types.INVALID_PARAMS, message=NOT_INITIALIZED.format(method=ctx.method)
            ) from None
        raise


class _Handlers:
    def __init__(self, session: AgentSession, workspace: SessionWorkspace) -> None:
        self.session = session
        self.workspace = workspace

    async def list_tools(
        self, ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(
        self, ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        handler = _TOOL_HANDLERS.get(params.name)
        if handler is None:
            return _error(f"remem has no tool `{shown(params.name)}`; it offers {', '.join(_TOOL_HANDLERS)}.")
        try:
            cwd = await self._resolve(ctx)
            if isinstance(cwd, types.InputRequiredResult):
                return cwd
            return await handler(self.session, cwd, params.arguments or {})
        except Refusal as refusal:
            return _error(refusal.message)
        except Exception:
            log.exception("%s failed", params.name)
            return _error(UNEXPECTED)

    async def list_resources(
        self, ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        cwd = self.workspace.pinned  # a listing cannot ask the client for its roots
        if cwd is None:
            return types.ListResourcesResult(resources=[_CONTEXT_RESOURCE])
        try:
            entries = await self.session.index(cwd)
        except Refusal:
            entries = []  # invalid memory: the context resource tells why when it is read
        records = [
            types.Resource(
                uri=f"{RECORD_PREFIX}{e.name}", name=e.name, description=e.description, mime_type=MARKDOWN
            )
            for e in entries
        ]
        return types.ListResourcesResult(resources=[_CONTEXT_RESOURCE, *records])

    async def list_templates(
        self, ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[_RECORD_TEMPLATE])

    async def read_resource(
        self, ctx: ServerRequestContext, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        uri = str(params.uri)
        if uri != CONTEXT_URI and not uri.startswith(RECORD_PREFIX):
            raise MCPError(code=types.INVALID_PARAMS, message=f"remem has no resource {shown(uri)}")
        name = None if uri == CONTEXT_URI else _record_name(uri)
        try:
            cwd = await self._resolve(ctx)
            if isinstance(cwd, types.InputRequiredResult):
                return cwd
            if name is None:
                text = await self.session.context(cwd)
            else:
                text = await self.session.read(cwd, name)
        except Refusal as refusal:
            raise MCPError(code=types.INVALID_PARAMS, message=refusal.message) from None
        except Exception:
            log.exception("reading %s failed", uri)
            raise MCPError(code=types.INTERNAL_ERROR, message=UNEXPECTED) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, text=text, mime_type=MARKDOWN)]
        )

    async def _resolve(self, ctx: ServerRequestContext) -> str | types.InputRequiredResult:
        """The session's workspace folder; also learns the client's name for the audit."""
        params = ctx.session.client_params
        if self.session.client is None and params is not None:
            self.session.client = client_label(params.client_info.name, params.client_info.version)
        try:
            return await self.workspace.resolve(ctx)
        except StartFolderGone as gone:
            raise Refusal(str(gone)) from None


def client_label(name: str, version: str) -> str:
    """ "name/version" as the audit and the history record the client: one line of at most
    `MAX_CLIENT_CHARS` printable characters, whatever the client declared (a line or paragraph
    separator, a control or format character each become a space), with what looks like a
    credential masked, as everything remem keeps is: the audit holds ids, never content. Masked
    whole before it is cut, so that no cut leaves a key too short to be recognised."""
    label = "".join(" " if _unprintable(c) else c for c in f"{name}/{version}")
    return redact(label)[:MAX_CLIENT_CHARS]


def _unprintable(char: str) -> bool:
    category = unicodedata.category(char)
    return category[0] == "C" or category in ("Zl", "Zp")


_CONTEXT_RESOURCE = types.Resource(
    uri=CONTEXT_URI,
    name="memory-context",
    title="remem memory context",
    description="What memory_context returns: Global memory and this project's index.",
    mime_type=MARKDOWN,
)
_RECORD_TEMPLATE = types.ResourceTemplate(
    uri_template=f"{RECORD_PREFIX}{{name}}",
    name="memory-record",
    title="remem memory record",
    description="One memory record of this project, by name.",
    mime_type=MARKDOWN,
)


async def _memory_context(session: AgentSession, cwd: str, arguments: dict[str, Any]) -> types.CallToolResult:
    _parsed(CONTEXT, ContextArguments, arguments)
    return _text(await session.context(cwd))


async def _memory_read(session: AgentSession, cwd: str, arguments: dict[str, Any]) -> types.CallToolResult:
    return _text(await session.read(cwd, _parsed(READ, ReadArguments, arguments).name))


async def _memory_update(session: AgentSession, cwd: str, arguments: dict[str, Any]) -> types.CallToolResult:
    result = await session.update(cwd, arguments)
    where = "Global memory" if result.scope == "global" else "this project's memory"
    if result.status == "no-change":
        message, warnings = f"No change: {where} already holds this.", []
    else:
        message, warnings = f"Committed {result.changes} change(s) to {where}.", result.warnings
    text = message + "".join(f"\nWarning: {warning}" for warning in warnings)
    structured = {"scope": result.scope, "changes": result.changes, "message": message, "warnings": warnings}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


async def _memory_history(session: AgentSession, cwd: str, arguments: dict[str, Any]) -> types.CallToolResult:
    recent = await session.history(cwd, _parsed(HISTORY, HistoryArguments, arguments).limit)
    if recent.entries:
        lines = [
            "Recent changes to memory, newest first:",
            *(_change_line(session, e) for e in recent.entries),
        ]
    else:
        lines = ["No changes to memory have been recorded yet."]
    lines += [
        f"Warning: the history of {_WHERE[scope]} lacks changes it could not record; "
        "`remem memory log` tells the user why, and it records the state it finds once it can."
        for scope in recent.gaps
    ]
    return _text("\n".join(lines))


_WHERE = {"global": "Global memory", "workspace": "this project"}
_AUTHORS = {
    "cli": "a `remem` command",
    "agent": "an agent",
    "consolidation": "remem's consolidation of a session",
    "hand-edit": "the user, editing by hand",
    "recovered": "someone while remem was not watching (found later)",
    "revert": "the user, reverting to an earlier version",
}


def _change_line(session: AgentSession, entry: HistoryEntry) -> str:
    who = "you (this session)" if entry.actor.session == session.id else _AUTHORS[entry.actor.kind]
    where = _WHERE[entry.scope]
    stat = entry.stat
    what = [] if stat is None else [
        f"{label} {', '.join(f'`{n}`' for n in names)}"
        for label, names in (("added", stat.added), ("changed", stat.changed), ("removed", stat.removed))
        if names and entry.scope == "workspace"
    ]  # fmt: skip
    # One line per change, as `remem memory log` prints it: a hand-made file's name may hold a break.
    return one_line(f"- {entry.at} by {who}: {where}" + (f": {'; '.join(what)}" if what else " changed"))


_TOOL_HANDLERS: dict[str, ToolHandler] = {
    CONTEXT: _memory_context,
    READ: _memory_read,
    UPDATE: _memory_update,
    HISTORY: _memory_history,
}


def _parsed(tool: str, model: type[A], arguments: dict[str, Any]) -> A:
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        raise Refusal(argument_problems(tool, exc)) from None


def _record_name(uri: str) -> str:
    """The record `uri` names, checked as memory_read checks its `name` (what the request to the
    daemon takes), or INVALID_PARAMS saying what a name is."""
    try:
        return ReadArguments(name=uri[len(RECORD_PREFIX) :]).name
    except ValidationError as exc:
        problems = "; ".join(error["msg"] for error in exc.errors())
        raise MCPError(
            code=types.INVALID_PARAMS, message=NOT_A_RECORD_NAME.format(uri=shown(uri), problem=problems)
        ) from None


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def serve(home: Home, *, cwd: str | None, use_daemon: bool) -> None:
    """Serve one client on stdin/stdout until it hangs up; `cwd` (else the current folder) is the
    project, unless the client declares roots and no `cwd` was given."""
    log_to_stderr(logging.WARNING, "remem mcp: %(levelname)s %(message)s")
    workspace = SessionWorkspace(cwd or _start_folder(), explicit=cwd is not None)
    watch = _watching(home)
    store = MemoryStore(home) if watch else None
    anyio.run(_serve, open_link(home, use_daemon, watch=watch), workspace, ContextWatch(store))


def _start_folder() -> str | None:
    """The folder the server was started in; None when it was removed before (roots may still
    choose the workspace; if none does, each call says so)."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        log.warning("the folder this server was started in no longer exists")
        return None


async def _serve(link: MemoryLink, workspace: SessionWorkspace, watch: ContextWatch) -> None:
    server = build_server(AgentSession(link, UpdateBudget(), watch, call_seconds()), workspace)
    # fd 0 is claimed as `stdio_server` claims it when it opens stdin itself: handlers and children
    # read the null device, never the client's lines.
    stdin, release = _claim_fd(0, sys.stdin, "rb", _open_stdin_diversion)
    source = _ClientLines(anyio.wrap_file(stdin))
    try:
        async with stdio_server(stdin=source) as (read_stream, write_stream):  # type: ignore[arg-type]
            answers = _Answers(write_stream)
            lines = _AnsweringInvalidLines(read_stream, answers, workspace.input_closed, source)
            await server.run(lines, answers, server.create_initialization_options())
    except ExceptionGroup as group:  # the transport's tasks fail as a group
        raise _output_failure(group) from None
    finally:
        if release is not None:
            release()
        watch.close()
        await link.close()


# What only writing fails with (a full disk, a quota, a file grown too large); reading the client's
# lines never does, so these are the output's, whichever of the transport's tasks met them.
_WRITING_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _output_failure(group: ExceptionGroup[Exception]) -> Exception:
    """What the command line's `main` reports of the transport's failure, as for every command's
    output: the client closing its end of stdout (EPIPE, which only a write meets) ends quietly,
    an output that cannot be written is said; anything else is as it came (a bug's report)."""
    match group.exceptions:
        case [BrokenPipeError() as closed]:
            return closed
        case [OSError(errno=code) as failed] if code in _WRITING_ERRNOS:
            return OutputUnwritable(failed.strerror or str(failed))
    return group


@dataclass(frozen=True)
class _Line:
    """One line the client sent, as text, and the answer refusing it if it is refused as read."""

    text: str
    refused: types.JSONRPCError | None = None


class _ClientLines:
    """The client's lines, as `stdio_server` reads them (one message a line), each also kept, in
    order, for `_AnsweringInvalidLines`: the SDK's parse loses what a line held beyond its model
    (a request's id that is not a string or an integer makes it a notification, unanswered). A
    line that is not UTF-8 is refused as it is read (`stdio_server` read stdin replacing what is
    not UTF-8 with U+FFFD, which memory_update then committed)."""

    def __init__(self, stdin: anyio.AsyncFile[bytes]) -> None:
        self._stdin = stdin
        self._read: deque[_Line] = deque()

    def __aiter__(self) -> _ClientLines:
        return self

    async def __anext__(self) -> str:
        raw = await self._stdin.readline()
        if not raw:
            raise StopAsyncIteration
        try:
            line = _Line(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            line = _Line(raw.decode("utf-8", "replace"), _not_utf8(raw, exc))
        self._read.append(line)
        return line.text

    def taken(self) -> _Line | None:
        """The line of the transport's next item: `stdio_server` passes on one item a line, in
        order, either the message parsed or the exception parsing it raised."""
        return self._read.popleft() if self._read else None


def _not_utf8(raw: bytes, exc: UnicodeDecodeError) -> types.JSONRPCError:
    """The answer to a line that is not UTF-8, which JSON text is (RFC 8259): decoded loosely, its
    bytes were stored as U+FFFD. With the line's id when it is a request whose id can be read."""
    sent = _lenient_json(raw.decode("utf-8", "surrogateescape"))  # its id's escapes are no id
    return _error_answer(
        _request_id(sent),
        types.PARSE_ERROR,
        f"Parse error: the line is not UTF-8 (byte 0x{raw[exc.start]:02x} at {exc.start}), as JSON text is",
    )


# How long requests still being served may take to be answered once the client closed its input:
# a tool call's own waits (memory's are cut at `call_seconds`, a client's roots at 5 s) end well
# inside it, and a harness that closed stdin to shut the server down waits for it to exit (or
# ends it) anyway.
INPUT_CLOSED_DRAIN_SECONDS = 30.0


class _Answers:
    """The stream the server answers on, knowing which of the client's requests are unanswered.

    At the end of its input the SDK's dispatcher cancels every request still being served, and
    answers it `Connection closed` — an update whose commit lands all the same included — or
    never starts it. So the end of input is passed on only once they are answered (`drained`)."""

    def __init__(self, stream: WriteStream[SessionMessage]) -> None:
        self._stream = stream
        # Counted per id as the SDK correlates them ("7" is 7): a client may reuse an id, and
        # name the request it cancels by either spelling.
        self._unanswered: Counter[types.RequestId] = Counter()
        self._answered = anyio.Event()

    def expect(self, message: types.JSONRPCMessage) -> None:
        """Note a message passed on to the server: a request is to be answered, one the client
        cancelled is never (the spec forbids it)."""
        if isinstance(message, types.JSONRPCRequest):
            self._unanswered[coerce_request_id(message.id)] += 1
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled = (message.params or {}).get("requestId")
            if isinstance(cancelled, str | int) and not isinstance(cancelled, bool):
                self._settle(cancelled)

    async def send(self, item: SessionMessage, /) -> None:
        await self._stream.send(item)
        if (
            isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError)
            and item.message.id is not None
        ):
            self._settle(item.message.id)

    def _settle(self, request_id: types.RequestId) -> None:
        key = coerce_request_id(request_id)
        if self._unanswered[key] > 0:
            self._unanswered[key] -= 1
            self._answered.set()
            self._answered = anyio.Event()

    async def drained(self) -> None:
        """Wait until every request passed on is answered, for `INPUT_CLOSED_DRAIN_SECONDS` at most."""
        with anyio.move_on_after(INPUT_CLOSED_DRAIN_SECONDS):
            while self._unanswered.total():
                await self._answered.wait()
        if self._unanswered.total():
            log.warning(
                "the client closed its input; %d request(s) unanswered after %.0f s",
                self._unanswered.total(),
                INPUT_CLOSED_DRAIN_SECONDS,
            )

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _Answers:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class _AnsweringInvalidLines:
    """The transport's stream of the client's messages, answering each line that is not one.

    `stdio_server` passes a line it cannot parse on as the exception, and the SDK's dispatcher
    drops those unanswered (its `on_stream_exception` observer cannot be set through
    `Server.run`): a client that sent a request it got wrong would wait forever. Here each gets
    the error JSON-RPC gives it, on the write stream the server answers on. So does a request
    the SDK parsed as a notification, its id being neither a string nor an integer (`source`,
    the lines as sent, tells). The end of the lines is told to `at_end` (what waits on the
    client stops waiting), then waits for the requests passed on to be answered (`_Answers`).
    """

    def __init__(
        self,
        lines: ReadStream[SessionMessage | Exception],
        answers: _Answers,
        at_end: Callable[[], None],
        source: _ClientLines | None = None,
    ) -> None:
        self._lines = lines
        self._answers = answers
        self._at_end = at_end
        self._source = source

    async def receive(self) -> SessionMessage:
        while True:
            try:
                item = await self._lines.receive()
            except anyio.EndOfStream:
                self._at_end()  # before the drain: a request waiting on the client can end now
                await self._answers.drained()
                raise
            answer = _refusal(item, self._source.taken() if self._source is not None else None)
            if answer is None and not isinstance(item, Exception):
                self._answers.expect(item.message)
                return item
            if answer is not None:  # else a blank line, which asks nothing
                log.warning("answered a line that is not a JSON-RPC message: %s", answer.error.message)
                await self._answers.send(SessionMessage(answer))

    async def aclose(self) -> None:
        await self._lines.aclose()

    def __aiter__(self) -> _AnsweringInvalidLines:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _AnsweringInvalidLines:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _refusal(item: SessionMessage | Exception, sent: _Line | None) -> types.JSONRPCError | None:
    """The answer refusing the line `sent` that the transport parsed as `item`; None when it is
    served, or asks nothing (a blank line)."""
    if sent is not None and sent.refused is not None:
        return sent.refused
    if isinstance(item, Exception):
        return _rejection(item)
    if sent is not None and isinstance(item.message, types.JSONRPCNotification):
        return _request_with_invalid_id(sent.text)
    return None


def _rejection(failure: Exception) -> types.JSONRPCError | None:
    """The error that answers a line that is not a JSON-RPC message, with the line's id when it is
    a request whose id can be read, else null; None for a blank line, which asks nothing."""
    if not isinstance(failure, ValidationError):  # the transport parses with pydantic alone
        return _error_answer(None, types.PARSE_ERROR, f"Parse error: {failure}")
    errors = failure.errors(include_url=False)
    if errors[0]["type"] == "json_invalid":
        line = errors[0]["input"]
        if not line.strip():
            return None
        # JSON pydantic refuses may still be JSON to Python (a lone surrogate's escape): its id.
        return _error_answer(
            _request_id(_lenient_json(line)), types.PARSE_ERROR, f"Parse error: {errors[0]['msg']}"
        )
    # Each member of the message union reports the line whole where it is not an object at all,
    # or where it misses a field: that is where the parsed line can be read.
    value = next((e["input"] for e in errors if len(e["loc"]) == 1 or e["type"] == "missing"), None)
    if isinstance(value, list):
        said = "a batch (a JSON array) is not served: send each message on a line of its own"
    else:
        member = _resembled(value)
        said = "; ".join(problem(e, "message", depth=1) for e in errors if e["loc"][0] == member)
    return _error_answer(_request_id(value), types.INVALID_REQUEST, f"Invalid Request: {said}")


def _request_with_invalid_id(line: str) -> types.JSONRPCError | None:
    """The answer to a line the SDK took for a notification that is a request (it has an `id`)
    whose id JSON-RPC does not allow, answered with id null; None for a notification."""
    value = _lenient_json(line)
    if not isinstance(value, dict) or "id" not in value:
        return None
    kind = _JSON_KINDS.get(type(value["id"]), "a number with a fraction or an exponent")
    return _error_answer(
        None,
        types.INVALID_REQUEST,
        f"Invalid Request: id: a request's id is a string or an integer, not {kind}",
    )


_JSON_KINDS = {bool: "true or false", type(None): "null", list: "an array", dict: "an object"}


def _lenient_json(line: str) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _request_id(value: Any) -> types.RequestId | None:
    """The id of a request, if `value` is one with an id JSON-RPC allows; an answer's id is of a
    request of the client's own, so a malformed answer is never answered with it."""
    if isinstance(value, dict) and "method" in value:
        request_id = value.get("id")
        if isinstance(request_id, str) and _sendable(request_id):
            return request_id
        if isinstance(request_id, int) and not isinstance(request_id, bool):
            return request_id
    return None


def _sendable(text: str) -> bool:
    """Whether `text` can be written back as UTF-8: an id holding a lone surrogate's escape cannot,
    and answering with it would end the transport (its error then goes out with id null)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _resembled(value: Any) -> str:
    """Which member of the message union an invalid line was meant as, to say what it lacks."""
    if isinstance(value, dict) and "method" not in value:
        if "result" in value:
            return types.JSONRPCResponse.__name__
        if "error" in value:
            return types.JSONRPCError.__name__
    if isinstance(value, dict) and "id" not in value:
        return types.JSONRPCNotification.__name__
    return types.JSONRPCRequest.__name__


def _error_answer(request_id: types.RequestId | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


def _watching(home: Home) -> bool:
    """Whether folders may be watched to tell changes (not with `daemon.watch: polling`, nor in a
    home that cannot be used, which is logged as such: its settings are not to blame)."""
    try:
        home.refuse_unusable_layout()
    except HomeUnusable as exc:
        log.warning("%s; until then every memory tool answers that memory cannot be reached", exc)
        return False
    try:
        settings, _ = SettingsStore(home).read()
    except SettingsError as exc:
        log.warning("settings.yml is invalid, so memory folders are not watched: %s", exc)
        return False
    return settings.daemon.watch != "polling"
