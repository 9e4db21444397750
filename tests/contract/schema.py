"""The wire contract as one JSON document: every daemon method's params and result schema, the
daemon's notifications and error codes, and the language server's `remem/*` requests, server
commands and notifications with the shape of what the editor sends them.

`tests/contract/protocol.json` is this document as checked in; `test_golden_schema.py` fails
when the code no longer produces it. After a deliberate change (and a `PROTOCOL_VERSION` bump):

    .venv/bin/python -m tests.contract.schema
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

import remem.lsp
from remem.daemon.home import Home
from remem.daemon.protocol import rpc as protocol
from remem.lsp import ids
from remem.lsp.compose import create_server

GOLDEN = Path(__file__).with_name("protocol.json")
REGENERATE = "python -m tests.contract.schema"
LSP_SOURCES = Path(remem.lsp.__file__).parent
# The validators that check what the editor sends: (function name, position of the model argument).
_VALIDATORS = {"parse": 0, "only_argument": 1}
_PROSE = ("title", "description")  # docstrings and generated titles: not part of the contract


def contract() -> dict[str, Any]:
    """The whole contract, as the code defines it now."""
    return {
        "protocolVersion": protocol.PROTOCOL_VERSION,
        "daemon": {
            "methods": {
                name: {
                    "params": _schema(m.params, "validation"),
                    "result": _schema(m.result, "serialization"),
                }
                for name, m in sorted(protocol.METHODS.items())
            },
            "notifications": {
                name: _schema(model, "serialization")
                for name, model in sorted(protocol.NOTIFICATIONS.items())
            },
            "errors": _error_codes(),
        },
        "lsp": _lsp_contract(),
    }


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, sort_keys=True) + "\n"


def _schema(model: type[BaseModel], mode: str) -> dict[str, Any]:
    return _without_prose(model.model_json_schema(mode=mode))  # type: ignore[arg-type]


def _without_prose(node: Any) -> Any:
    """`node` without the prose keywords; names in `properties` and `$defs` are kept as they are."""
    if isinstance(node, list):
        return [_without_prose(item) for item in node]
    if not isinstance(node, dict):
        return node
    kept = {}
    for key, value in node.items():
        if key in ("properties", "$defs"):
            kept[key] = {name: _without_prose(schema) for name, schema in value.items()}
        elif key not in _PROSE:
            kept[key] = _without_prose(value)
    return kept


def _error_codes() -> dict[str, int]:
    # JSON-RPC's own codes and the daemon's application codes, each a module constant.
    return {
        name: value
        for name, value in sorted(vars(protocol).items())
        if name.isupper() and isinstance(value, int) and -32768 <= value <= -32000
    }


def _lsp_contract() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="remem-contract-") as folder:
        features = create_server(Home(Path(folder) / "home")).protocol.fm
    requests = {name: f for name, f in features.features.items() if name.startswith("remem/")}
    return {
        "requests": {name: {"params": _argument_schema(f)} for name, f in sorted(requests.items())},
        "commands": {
            name: {"argument": _argument_schema(f)} for name, f in sorted(features.commands.items())
        },
        "notifications": sorted(set(_notifications())),
        "schemes": {"transcript": ids.TRANSCRIPT_SCHEME},
    }


def _argument_schema(registered: Callable[..., Any]) -> dict[str, Any] | None:
    """The schema of the model the handler checks its params with; None if it names none."""
    handler = getattr(registered, "func", registered)  # pygls wraps handlers that take the server
    tree = ast.parse(textwrap.dedent(inspect.getsource(handler)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _VALIDATORS:
            argument = node.args[_VALIDATORS[node.func.id]]
            if isinstance(argument, ast.Name):
                return _schema(handler.__globals__[argument.id], "validation")
    return None


def _notifications() -> Iterator[str]:
    """Every `remem/*` notification the server sends: `.notify(ids.NAME, ...)` anywhere in lsp/."""
    for path in sorted(LSP_SOURCES.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "notify"
            ):
                value = _string_of(node.args[0])
                if isinstance(value, str) and value.startswith(ids.REQUEST_PREFIX):
                    yield value


def _string_of(node: ast.expr) -> object:
    """A string literal's value, or the value of the `ids` constant `node` names."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ids":
        return getattr(ids, node.attr, None)
    return None


def unbumped_change(current: dict[str, Any], golden: dict[str, Any]) -> bool:
    """Whether the contract changed while `PROTOCOL_VERSION` stayed what the golden file has."""
    return current != golden and current["protocolVersion"] == golden["protocolVersion"]


def main() -> int:
    current = contract()
    if GOLDEN.exists() and unbumped_change(current, json.loads(GOLDEN.read_text())):
        print(
            f"the wire contract changed but PROTOCOL_VERSION is still {current['protocolVersion']}: "
            "bump it in daemon/protocol/rpc.py (saying why in its comment), then run this again",
            file=sys.stderr,
        )
        return 1
    GOLDEN.write_text(render(current))
    print(f"wrote {GOLDEN.name} for protocol {current['protocolVersion']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
