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

import logging
import os
import unicodedata
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from remem.daemon import __version__
from remem.daemon.credentials import log_to_stderr
from remem.daemon.home import Home
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import HistoryEntry
from remem.daemon.settings import SettingsError, SettingsStore

from .context_watch import ContextWatch
from .limits import UpdateBudget
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
)
from .workspace import SessionWorkspace, StartFolderGone

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

MAX_CLIENT_CHARS = 200
A = TypeVar("A", bound=BaseModel)
log = logging.getLogger("remem.agents")
ToolHandler = Callable[[AgentSession, str, dict[str, Any]], Awaitable[types.CallToolResult]]


def build_server(session: AgentSession, workspace: SessionWorkspace) -> Server:
    """The MCP server of one session (stdio: one client per process)."""
    handlers = _Handlers(session, workspace)
    return Server(
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
            return _error(f"remem has no tool `{params.name}`; it offers {', '.join(_TOOL_HANDLERS)}.")
        try:
            cwd = await self._resolve(ctx, params.input_responses)
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
            raise MCPError(code=types.INVALID_PARAMS, message=f"remem has no resource {uri}")
        name = None if uri == CONTEXT_URI else _record_name(uri)
        try:
            cwd = await self._resolve(ctx, params.input_responses)
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

    async def _resolve(
        self, ctx: ServerRequestContext, answers: types.InputResponses | None
    ) -> str | types.InputRequiredResult:
        """The session's workspace folder; also learns the client's name for the audit."""
        params = ctx.session.client_params
        if self.session.client is None and params is not None:
            self.session.client = client_label(params.client_info.name, params.client_info.version)
        try:
            return await self.workspace.resolve(ctx, answers)
        except StartFolderGone as gone:
            raise Refusal(str(gone)) from None


def client_label(name: str, version: str) -> str:
    """ "name/version" as the audit and the history record the client: one line of at most
    `MAX_CLIENT_CHARS` printable characters, whatever the client declared (a line or paragraph
    separator, a control or format character each become a space)."""
    label = "".join(" " if _unprintable(c) else c for c in f"{name}/{version}")
    return label[:MAX_CLIENT_CHARS]


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
    return f"- {entry.at} by {who}: {where}" + (f": {'; '.join(what)}" if what else " changed")


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
        problem = "; ".join(error["msg"] for error in exc.errors())
        shown = uri if len(uri) <= 60 else f"{uri[:60]}…"
        raise MCPError(
            code=types.INVALID_PARAMS, message=NOT_A_RECORD_NAME.format(uri=shown, problem=problem)
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
    server = build_server(AgentSession(link, UpdateBudget(), watch), workspace)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        watch.close()
        await link.close()


def _watching(home: Home) -> bool:
    """Whether folders may be watched to tell changes (not with `daemon.watch: polling`)."""
    try:
        settings, _ = SettingsStore(home).read()
    except SettingsError as exc:
        log.warning("settings.yml is invalid, so memory folders are not watched: %s", exc)
        return False
    return settings.daemon.watch != "polling"
