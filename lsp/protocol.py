"""What the server's JSON-RPC layer adds to pygls: raw `remem/*` params, and commands' requests.

pygls turns the params of requests it has no type for into nested namedtuples, which mangle
keys and hide what the editor sent; `remem/*` requests keep them as JSON here, so each handler
validates them with its own pydantic model and names the field that is wrong.

pygls runs a `workspace/executeCommand` handler under an id of its own: cancelling the request
(`$/cancelRequest`) would answer it as cancelled at once while the command goes on, and may
still write, and the command never sees the request's `workDoneToken`. A `CommandRequest`
carries the token to the command, and a cancel of the request, or of the progress on that
token (even one sent before the command began its progress), as a wish to stop: the request
stays open and the command answers what really happened (decision 0352).

`shutdown` asks the running commands to stop, as a cancelled progress does, and waits a moment
for their answers before it answers (pygls's own cancelled them while iterating the dict their
futures leave at once, and failed; decision 0392).

A plain request that writes (`WRITES`: `remem/revertMemory`) cannot be stopped once the daemon
has it, and pygls answered a cancelled one, or one running at `shutdown`, as cancelled while the
daemon committed. It is never cancelled: it answers what happened, and `shutdown` waits for it
as for a command.

pygls logs and drops a request whose params do not have the spec's shape (a hover at line
-1, a command without `command`), one whose method is no string, and a request after
`shutdown`: the client would wait for an answer forever. Each gets its error here, as the spec
has it: InvalidParams naming what is wrong, InvalidRequest for the others. Before `initialize`
a request is refused ServerNotInitialized and a notification, but `exit`, is dropped; a second
`initialize` is refused InvalidRequest (pygls would start a new workspace, its documents gone).
Its answer names the `remem/*` protocol in `capabilities.experimental.remem.protocol`, so an
editor extension newer than the server can say so rather than fail a request it sends.

What pygls showed the user as a popup ("Error in server: …") gets the spec's answer instead: a
JSON value that is no message (a batch, a number), and a request whose id is no integer or
string (an object, an array, a boolean, null: pygls ran it, a `shutdown` of id null too),
InvalidRequest with id null, never run (a body that is no JSON, ParseError:
`RememServer.report_server_error`). A notification whose params do not have
the spec's shape, or a change to a document never opened, is dropped with a line in the log
that names what is wrong, never the params; the document a dropped change was for is lost
(`RememServer.lose`): its copy is no longer the editor's (decision 0449). A string the spec
asks for must be a string: pygls made one of any value, and a change's `"text": null` made the
document "None" (decision 0421).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Generator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import attrs
import cattrs
from cattrs.v import format_exception
from lsprotocol import types
from pygls.exceptions import (
    FeatureNotificationError,
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import JsonRPCNotification, MsgId

from remem.daemon.protocol.rpc import PROTOCOL_VERSION

from . import ids
from .text_documents import LspTextDocument, LspWorkspace

log = logging.getLogger(__name__)


@attrs.define
class RawRequest:
    """A `remem/*` request with its params exactly as sent."""

    id: MsgId
    method: str
    jsonrpc: str
    params: Any = None


class _Answered:
    """A message answered with its error (or dropped) while it was read: nothing more to do."""


_ANSWERED = _Answered()

# How long `shutdown` waits for the commands it asked to stop (a consolidation's cancel goes
# through the daemon) before it cancels what is left and answers.
SHUTDOWN_WAIT = 5.0
# The plain requests that change memory: each runs to its end and answers what it did.
WRITES = frozenset({ids.REVERT_MEMORY})
# The notifications that come in bursts: the work features put off (`before_message`) waits
# past them, for the burst's end or any other message.
_PUTTING_OFF = frozenset({types.TEXT_DOCUMENT_DID_OPEN, types.WORKSPACE_DID_CHANGE_WATCHED_FILES})


@dataclass
class CommandRequest:
    """The `workspace/executeCommand` request a command runs for."""

    token: types.ProgressToken | None
    # The client asked the command to stop, by cancelling the request or the progress on `token`.
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    # By cancelling the request: the client awaits RequestCancelled, which only a command that
    # changed nothing may answer.
    cancelled: bool = False


class RememProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._commands: dict[MsgId, CommandRequest] = {}
        self._writes: set[MsgId] = set()  # the `WRITES` requests running
        self._initialized = False
        # cattrs made a string of any value (`str(x)`): a change's `"text": null` became the
        # document "None". A string the spec asks for must be one.
        self._converter.register_structure_hook(str, _string)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, types.InitializeResult]:
        # Every range remem makes counts UTF-16 units (documents, front matter, symbols), the
        # encoding each client must support: pygls would take the client's first offer (Neovim
        # and Helix put utf-8 first), and every range on a non-ASCII line would be wrong.
        general = params.capabilities.general
        if general is not None and general.position_encodings is not None:
            general.position_encodings = [types.PositionEncodingKind.Utf16]
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"remem": {"protocol": PROTOCOL_VERSION}}
        self._workspace = LspWorkspace.like(self.workspace)  # before any document opens
        self._initialized = True
        return result

    @property
    def shut_down(self) -> bool:
        """Whether the client asked for `shutdown`: an `exit` (or the end of input) before it
        ends the server with an error status."""
        return self._shutdown

    def structure_message(self, data: dict[str, Any]) -> Any:
        # Called for every object of a message, innermost first: a message is what has `jsonrpc`.
        if "jsonrpc" in data and "method" in data and "id" in data and not _valid_id(data["id"]):
            return self._unidentified(data)
        if "jsonrpc" in data and "method" in data and not isinstance(data["method"], str):
            return self._unnamed(data)
        if "jsonrpc" in data and "id" not in data and "method" in data:
            return self._notification(data)
        if (
            "jsonrpc" in data
            and "method" in data
            and not self._initialized
            and data["method"] != types.INITIALIZE
        ):
            # The spec's ServerNotInitialized, whatever the params: before `initialize`, a
            # request would run on settings not yet known, and a `remem/*` one would even start
            # the daemon for a client that may never initialize.
            self._send_response(data["id"], None, JsonRpcServerNotInitialized().to_response_error())
            return _ANSWERED
        wrong = _loose_arguments(data)
        if wrong is None:
            try:
                return super().structure_message(data)
            except JsonRpcException as error:
                if "id" not in data or not isinstance(data.get("method"), str):
                    raise  # a notification or a response: nobody waits for an answer
                cause = error.__cause__
                if isinstance(cause, cattrs.BaseValidationError):
                    wrong = "; ".join(cattrs.transform_error(cause))
                else:
                    wrong = "params not of the spec's shape"
        answer = JsonRpcInvalidParams(f"{data['method']}: {wrong}")
        self._send_response(data["id"], None, answer.to_response_error())
        return _ANSWERED

    def _notification(self, data: dict[str, Any]) -> Any:
        """A notification, or `_ANSWERED` when its params do not have the spec's shape: nobody
        waits for an answer, so it is dropped with a line in the log, never a popup (pygls
        showed "Error in server: Invalid Params") nor its params (a document's text)."""
        method = data["method"]
        try:
            return self._converter.structure(data, self.get_message_type(method) or JsonRPCNotification)
        except Exception as error:
            wrong = (
                "; ".join(cattrs.transform_error(error, format_exception=_without_values))
                if isinstance(error, cattrs.BaseValidationError)
                else "params not of the spec's shape"
            )
            log.warning("%s dropped: %s", method, wrong)
            if method == types.TEXT_DOCUMENT_DID_CHANGE:
                self._lose_changed(data.get("params"))
            return _ANSWERED

    def _lose_changed(self, params: Any) -> None:
        """The document a dropped change was for, if it is open, is no longer the editor's text."""
        identifier = params.get("textDocument") if isinstance(params, dict) else None
        uri = identifier.get("uri") if isinstance(identifier, dict) else None
        document = self.workspace.text_documents.get(unquote(uri)) if isinstance(uri, str) else None
        if isinstance(document, LspTextDocument):
            self._server.lose(document)  # type: ignore[attr-defined]

    def refuse_unreadable(self, error: Exception) -> None:
        """Answer a message that is no JSON (`error`, from the read loop) ParseError, with the id
        the spec gives what has none that can be read: null."""
        log.warning("a message that is no JSON was refused: %s", error)
        self._refuse_unidentified(JsonRpcParseError(f"not JSON: {error}"))

    def _refuse_unidentified(self, error: JsonRpcException) -> None:
        # pygls's response types leave out an id that is None; the spec writes `"id": null`.
        self._send_data({"jsonrpc": self.VERSION, "id": None, "error": error.to_response_error()})

    def _unidentified(self, data: dict[str, Any]) -> _Answered:
        """A request whose id is no integer or string (an object, an array, a boolean, null),
        which pygls ran (a `shutdown` of id null shut the server down): refused InvalidRequest
        with the id the spec gives what has none that can be read, null, and never run."""
        method = data["method"] if isinstance(data["method"], str) else "a request"
        log.warning("%s refused: its id is no integer or string", method)
        self._refuse_unidentified(JsonRpcInvalidRequest(f"{method}: `id` must be an integer or a string"))
        return _ANSWERED

    def _unnamed(self, data: dict[str, Any]) -> _Answered:
        """A message whose method is no string, which pygls failed on (no `startswith`) and
        answered nothing: a request is refused InvalidRequest, a notification dropped."""
        if isinstance(data.get("id"), int | str):
            refused = JsonRpcInvalidRequest("`method` must be a string")
            self._send_response(data["id"], None, refused.to_response_error())
        return _ANSWERED

    def handle_message(self, message: Any) -> None:
        if message is _ANSWERED:
            return
        if not hasattr(message, "jsonrpc"):
            # No JSON-RPC message: an array (a batch, which LSP does not have), a number, an
            # object without `jsonrpc`. pygls failed on it with a popup and answered nothing.
            shape = "a batch (an array)" if isinstance(message, list) else "no JSON-RPC 2.0 message object"
            log.warning("a message that is %s was refused", shape)
            self._refuse_unidentified(JsonRpcInvalidRequest(f"the message is {shape}; send one object"))
            return
        method = getattr(message, "method", None)
        if method not in _PUTTING_OFF:
            self._do_put_off(method)
        if self._shutdown and hasattr(message, "id") and isinstance(method, str) and method != types.EXIT:
            refused = JsonRpcInvalidRequest(f"{method}: the server is shutting down")
            self._send_response(message.id, None, refused.to_response_error())
            return
        super().handle_message(message)

    def _do_put_off(self, method: Any) -> None:
        """Do the work features put off until the next message (`before_message`). A piece
        that fails is reported as a notification's failure is, and the message is handled
        still: a request it dropped was never answered, a `shutdown` lost."""
        for work in self._server.before_message:  # type: ignore[attr-defined]
            try:
                work()
            except Exception as error:
                log.exception("work put off until %s failed", method)
                self._server._report_server_error(error, FeatureNotificationError)

    def _handle_request(self, msg_id: MsgId, method_name: str, params: Any) -> None:
        if self._initialized and method_name == types.INITIALIZE:  # it would forget every open document
            refused = JsonRpcInvalidRequest("initialize: the server is initialized already; it is sent once")
            self._send_response(msg_id, None, refused.to_response_error())
            return
        super()._handle_request(msg_id, method_name, params)
        future = self._request_futures.get(msg_id) if method_name in WRITES else None
        if future is not None and not future.done():
            self._writes.add(msg_id)
            future.add_done_callback(lambda _: self._writes.discard(msg_id))

    def _handle_notification(self, method_name: str, params: Any) -> None:
        # The spec drops every notification but `exit` before `initialize`: a document opened
        # then would be refused with a popup, and `initialized` would start the daemon.
        if self._initialized or method_name == types.EXIT:
            super()._handle_notification(method_name, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        # A change to a document never opened has no text to apply to: pygls failed with a
        # KeyError popup. It is dropped, as a notification with params of the wrong shape is.
        if unquote(params.text_document.uri) not in self.workspace.text_documents:
            log.warning("%s dropped: the document is not open", types.TEXT_DOCUMENT_DID_CHANGE)
            return
        yield from super().lsp_text_document__did_change(params)

    # pygls caches its own with functools.lru_cache, which mypy takes for the method's type.
    def get_message_type(self, method: str) -> type[Any] | None:  # type: ignore[override]
        # Only requests the server handles: pygls asks this for what it sends as well.
        if method.startswith(ids.REQUEST_PREFIX) and method in self.fm.features:
            return RawRequest
        return super().get_message_type(method)

    def command_request(self) -> CommandRequest | None:
        """The request of the command running in the current task (None outside a command)."""
        request_id = self.msg_id
        return None if request_id is None else self._commands.get(request_id)

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams) -> Generator[Any, Any, Any]:
        request_id = self.msg_id
        assert request_id is not None
        self._commands[request_id] = CommandRequest(token=params.work_done_token)
        try:
            return (yield from super().lsp_workspace__execute_command(params))
        finally:
            self._commands.pop(request_id, None)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        # pygls cancels every pending future while iterating the dict of them, and a command's
        # (a `concurrent.futures.Future`) leaves that dict at once when cancelled: `shutdown`
        # failed with "dictionary changed size during iteration" and `exit` with status 1. Each
        # running command is asked to stop instead, as a cancelled progress asks it, and has a
        # moment to answer what happened and end its progress, before the daemon link closes.
        # A running write is waited for too, and never cancelled: the daemon may have committed
        # it; one still running when the link closes answers that it may or may not be done.
        current = self.msg_id
        if self._commands or self._writes:
            yield self._finish_running, (), None
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        for msg_id, future in list(self._request_futures.items()):  # what is left, cancelled
            if msg_id != current and msg_id not in self._writes and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    async def _finish_running(self) -> None:
        """Ask every running command to stop; wait (at most `SHUTDOWN_WAIT`) for their answers
        and those of the running writes."""
        running = []
        for request in self._commands.values():
            request.stop.set()
        for request_id in [*self._commands, *self._writes]:
            future = self._request_futures.get(request_id)
            if future is not None and not future.done():
                running.append(asyncio.wrap_future(future) if isinstance(future, Future) else future)
        if running:
            await asyncio.wait(running, timeout=SHUTDOWN_WAIT)

    @lsp_method(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def lsp_work_done_progress_cancel(
        self, params: types.WorkDoneProgressCancelParams
    ) -> Generator[Any, Any, None]:
        # A cancel can come before the command has begun its progress: pygls would drop it
        # (and log it as ignored).
        taken = [request for request in self._commands.values() if request.token == params.token]
        for request in taken:
            request.stop.set()
        if not taken or params.token in self.progress.tokens:
            yield from super().lsp_work_done_progress_cancel(params)

    def _handle_cancel_notification(self, msg_id: MsgId) -> None:
        if msg_id in self._writes:
            return  # it may have written already: it answers what it did
        request = self._commands.get(msg_id)
        if request is None:
            super()._handle_cancel_notification(msg_id)
            return
        request.cancelled = True
        request.stop.set()


def _without_values(error: BaseException, kind: type | None) -> str:
    """What cattrs says is wrong, but never in words that may quote a value (its "unknown
    error (…)" and "invalid type (…)" repeat the exception's message)."""
    said = format_exception(error, kind)
    return f"invalid value ({type(error).__name__})" if said.endswith(")") else said


def _valid_id(value: Any) -> bool:
    """Whether `value` is a request id LSP allows: an integer or a string (a boolean is no
    integer, though Python counts it one; JSON-RPC's null and fractions LSP does not allow)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _string(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")  # cattrs says "expected str"; the value stays out
    return value


def _loose_arguments(data: dict[str, Any]) -> str | None:
    """Why a command's `arguments` are no array, when they are not: pygls's converter would
    take an object for the list of its keys, a string for its characters."""
    params = data.get("params")
    if (
        data.get("method") != types.WORKSPACE_EXECUTE_COMMAND
        or "id" not in data
        or not isinstance(params, dict)
    ):
        return None
    arguments = params.get("arguments")
    if arguments is None or isinstance(arguments, list):
        return None
    kind = {dict: "an object", str: "a string", bool: "a boolean"}.get(type(arguments), "a number")
    return f"`arguments` must be an array of the command's arguments; got {kind}"
