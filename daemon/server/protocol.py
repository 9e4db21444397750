"""The daemon's wire protocol: every method's params and result, shared by server and clients.

Messages are JSON-RPC 2.0, one per line (newline-delimited JSON), at most `MAX_MESSAGE_BYTES`.
`PROTOCOL_VERSION` changes whenever a method's shape changes incompatibly; a client and a
daemon that disagree on it (or on the app version) never talk past the `daemon/hello`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from .. import __version__

PROTOCOL_VERSION = 1
APP_VERSION = __version__
MAX_MESSAGE_BYTES = 4 * 1024 * 1024

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Empty(_Strict):
    pass


class HelloParams(_Strict):
    protocol: int
    version: str


class HelloResult(_Strict):
    protocol: int
    version: str
    pid: int


class StatusResult(_Strict):
    pid: int
    protocol: int
    version: str
    startedAt: str
    home: str
    clients: int


@dataclass(frozen=True)
class Method:
    params: type[BaseModel]
    result: type[BaseModel]


METHODS: dict[str, Method] = {
    "daemon/hello": Method(HelloParams, HelloResult),
    "daemon/status": Method(Empty, StatusResult),
    "daemon/shutdown": Method(Empty, Empty),
}


class RpcError(Exception):
    """A JSON-RPC error the daemon returns (or a client raises on receiving one)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class DaemonInfo(_Strict):
    """`state/daemon.json`: how to reach the running daemon; written once it listens."""

    pid: int
    socket: str
    protocol: int
    version: str
    startedAt: str
