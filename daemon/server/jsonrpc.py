"""JSON-RPC 2.0 over newline-delimited JSON: validating, dispatching, answering, never crashing.

Every malformed, oversized or hostile message gets the matching JSON-RPC error (or, when the
stream itself is broken, a closed connection); nothing a client sends can stop the daemon.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from .protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_MESSAGE_BYTES,
    METHOD_NOT_FOUND,
    METHODS,
    PARSE_ERROR,
    RpcError,
)

Handler = Callable[[Any], Awaitable[BaseModel]]
WRITE_TIMEOUT_SECONDS = 10.0
log = logging.getLogger("remem.daemon")


class Dispatcher:
    def __init__(self, handlers: dict[str, Handler]) -> None:
        assert set(handlers) == set(METHODS), "every protocol method has exactly one handler"
        self._handlers = handlers

    async def handle(self, line: bytes) -> dict[str, Any] | None:
        """The response to one message, or None for a notification."""
        try:
            message = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            return _error(None, RpcError(PARSE_ERROR, f"not valid JSON: {exc}"))
        request_id = message.get("id") if isinstance(message, dict) else None
        try:
            method, params = _request_parts(message)
            result = await self._call(method, params)
        except RpcError as exc:
            return _error(request_id, exc)
        except Exception:  # a bug in a handler must not take the daemon down
            log.exception("method failed")
            return _error(request_id, RpcError(INTERNAL_ERROR, "internal error; see the daemon log"))
        if "id" not in message:
            return None
        return {"jsonrpc": "2.0", "id": request_id, "result": result.model_dump(mode="json")}

    async def _call(self, method: str, params: Any) -> BaseModel:
        spec = METHODS.get(method)
        if spec is None:
            raise RpcError(METHOD_NOT_FOUND, f"unknown method {method!r}")
        try:
            parsed = spec.params.model_validate({} if params is None else params)
        except ValidationError as exc:
            problems = [{"field": ".".join(map(str, e["loc"])), "message": e["msg"]} for e in exc.errors()]
            raise RpcError(INVALID_PARAMS, f"invalid params for {method}", problems) from None
        return await self._handlers[method](parsed)


def _request_parts(message: Any) -> tuple[str, Any]:
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'a request is an object with "jsonrpc": "2.0"')
    method = message.get("method")
    if not isinstance(method, str):
        raise RpcError(INVALID_REQUEST, '"method" must be a string')
    request_id = message.get("id")
    if "id" in message and not (request_id is None or isinstance(request_id, (int, str))):
        raise RpcError(INVALID_REQUEST, '"id" must be a number, a string or null')
    params = message.get("params")
    if params is not None and not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, '"params" must be an object')
    return method, params


def _error(request_id: Any, error: RpcError) -> dict[str, Any]:
    usable = request_id if isinstance(request_id, (int, str)) else None
    return {"jsonrpc": "2.0", "id": usable, "error": error.to_json()}


async def serve_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, dispatcher: Dispatcher
) -> None:
    """Answer one client's messages in order until it closes, breaks the framing or stops reading."""
    try:
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.LimitOverrunError:
                too_big = RpcError(
                    INVALID_REQUEST, f"message exceeds {MAX_MESSAGE_BYTES} bytes; connection closed"
                )
                await _send(writer, _error(None, too_big))
                return
            except asyncio.IncompleteReadError:
                return  # the client closed (or half-closed) its side
            response = await dispatcher.handle(line)
            if response is not None:
                await _send(writer, response)
    except (ConnectionError, TimeoutError):
        return  # a client that vanished or never reads its answers loses only its own connection
    finally:
        writer.close()


async def _send(writer: asyncio.StreamWriter, response: dict[str, Any]) -> None:
    writer.write(json.dumps(response, separators=(",", ":")).encode() + b"\n")
    await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT_SECONDS)
