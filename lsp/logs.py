"""What the server's log says about a request that failed: one line for a refusal, never params.

pygls logs every error answer with its traceback and the request's params. A refusal the
server answers on purpose (any `JsonRpcException`: no API key, invalid memory, a wrong argument)
is no crash: it gets one line, "<method> refused: <message>". A real crash keeps its traceback.
Neither repeats the params, which may carry an API key (`remem.lsp.setApiKey`).
"""

from __future__ import annotations

import logging

from pygls.exceptions import JsonRpcException

_PYGLS_RPC = "pygls.protocol.json_rpc"
_FAILED = "Failed to handle request %s %s %s"  # pygls's message, with (id, method, params)


class _Refusals(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, JsonRpcException):
            args = record.args if isinstance(record.args, tuple) else ()
            named = record.msg == _FAILED and len(args) > 1
            what = args[1] if named else f"request {args[0] if args else '?'}"
            record.msg, record.args = "%s refused: %s", (what, error.message)
            record.exc_info, record.exc_text = None, None
        elif record.msg == _FAILED and isinstance(record.args, tuple):
            record.msg, record.args = "Failed to handle request %s %s", record.args[:2]
        return True


def quiet_refusals() -> None:
    """Install the filter on pygls's JSON-RPC logger (once per process)."""
    logger = logging.getLogger(_PYGLS_RPC)
    if not any(isinstance(f, _Refusals) for f in logger.filters):
        logger.addFilter(_Refusals())
