"""`DaemonApi`: one typed method per daemon method, over any transport that carries them.

Every front end (the CLI, the language server, the MCP server) asks the daemon through this
one client: a params model in, the result model out, so a call site names a method rather
than spelling its string and a result is checked where it arrives. The method names and
models come from `rpc.METHODS`; what carries a request is the transport's business: the socket
to the daemon (`daemon/client.py`), the daemon's handlers run in the caller's process
(`--no-daemon`, the MCP server's in-process mode), or the language server's link, which adds
reconnecting and its own errors. A synchronous transport gives synchronous methods (the CLI),
an asynchronous one awaitable methods, both typed from the same table.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, Generic, Protocol, TypeVar, overload

from pydantic import BaseModel

from . import rpc
from .rpc import Method, Params, Result


class Transport(Protocol):
    """Carries one request and returns its result, or raises `rpc.RpcError` as the daemon would."""

    def request(self, method: Method[Params, Result], params: Params) -> Result: ...


class AsyncTransport(Protocol):
    """`Transport` for an event loop."""

    async def request(self, method: Method[Params, Result], params: Params) -> Result: ...


T = TypeVar("T", bound=Transport | AsyncTransport, covariant=True)
Handler = Callable[[Any], Awaitable[BaseModel]]


class InProcessTransport:
    """The daemon's own handlers run in this process: the models pass as they are, unencoded."""

    def __init__(self, handlers: Mapping[str, Handler]) -> None:
        self._handlers = handlers

    async def request(self, method: Method[Params, Result], params: Params) -> Result:
        answer = await self._handlers[method.name](params)
        assert isinstance(answer, method.result), f"{method.name} answered a {type(answer).__name__}"
        return answer


class Endpoint(Generic[Params, Result]):
    """One method of `DaemonApi`: bound to an api, a call of its transport with `method`."""

    def __init__(self, method: Method[Params, Result]) -> None:
        self.method = method

    @overload
    def __get__(self, api: None, owner: type[Any]) -> Endpoint[Params, Result]: ...

    @overload
    def __get__(
        self, api: DaemonApi[AsyncTransport], owner: type[Any]
    ) -> Callable[[Params], Awaitable[Result]]: ...

    @overload
    def __get__(self, api: DaemonApi[Transport], owner: type[Any]) -> Callable[[Params], Result]: ...

    def __get__(self, api: DaemonApi[Any] | None, owner: type[Any]) -> Any:
        if api is None:
            return self
        return partial(api.transport.request, self.method)


class DaemonApi(Generic[T]):
    def __init__(self, transport: T) -> None:
        self.transport = transport

    hello = Endpoint(rpc.DAEMON_HELLO)
    status = Endpoint(rpc.DAEMON_STATUS)
    shutdown = Endpoint(rpc.DAEMON_SHUTDOWN)

    read_global = Endpoint(rpc.MEMORY_READ_GLOBAL)
    read_workspace = Endpoint(rpc.MEMORY_READ_WORKSPACE)
    replace_global = Endpoint(rpc.MEMORY_REPLACE_GLOBAL)
    commit_workspace = Endpoint(rpc.MEMORY_COMMIT_WORKSPACE)
    regenerate_index = Endpoint(rpc.MEMORY_REGENERATE_INDEX)
    memory_context = Endpoint(rpc.MEMORY_CONTEXT)
    memory_log = Endpoint(rpc.MEMORY_LOG)
    memory_diff = Endpoint(rpc.MEMORY_DIFF)
    memory_show_at = Endpoint(rpc.MEMORY_SHOW_AT)
    memory_revert = Endpoint(rpc.MEMORY_REVERT)
    memory_overview = Endpoint(rpc.MEMORY_OVERVIEW)

    list_sessions = Endpoint(rpc.SESSIONS_LIST)
    session_tree = Endpoint(rpc.SESSIONS_TREE)
    session_turns = Endpoint(rpc.SESSIONS_TURNS)
    session_transcript = Endpoint(rpc.SESSIONS_TRANSCRIPT)
    session_log = Endpoint(rpc.SESSIONS_LOG)
    fork_session = Endpoint(rpc.SESSIONS_FORK)
    rename_session = Endpoint(rpc.SESSIONS_RENAME)
    archive_session = Endpoint(rpc.SESSIONS_ARCHIVE)

    consolidate = Endpoint(rpc.CONSOLIDATION_RUN)
    cancel_consolidation = Endpoint(rpc.CONSOLIDATION_CANCEL)
    receipts = Endpoint(rpc.CONSOLIDATION_RECEIPTS)
    receipt = Endpoint(rpc.CONSOLIDATION_RECEIPT)
    model_settings = Endpoint(rpc.CONSOLIDATION_SETTINGS_READ)
    select_model = Endpoint(rpc.CONSOLIDATION_SETTINGS_SELECT)
    set_api_key = Endpoint(rpc.CONSOLIDATION_CREDENTIALS_SET)
    models = Endpoint(rpc.CONSOLIDATION_MODELS)

    agent_context = Endpoint(rpc.AGENTS_CONTEXT)
    agent_index = Endpoint(rpc.AGENTS_INDEX)
    agent_record = Endpoint(rpc.AGENTS_RECORD)
    agent_update = Endpoint(rpc.AGENTS_UPDATE)
