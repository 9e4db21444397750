"""The language server's names are written once, in `lsp/ids.py`, and the extension serves the
commands the server's lenses and links run (`test_golden_schema.py` pins the module to what the
server registers and sends)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from remem.lsp import ids
from tests.contract import schema

EXTENSION_SRC = Path(__file__).parents[2] / "vscode-extension" / "src"


def test_each_name_is_written_once_in_the_ids_module() -> None:
    names = {*ids.REQUESTS, *ids.NOTIFICATIONS, *ids.COMMANDS, *ids.EXTENSION_COMMANDS, ids.TRANSCRIPT_SCHEME}
    again = [
        f"{path.relative_to(schema.LSP_SOURCES)}:{node.lineno}: {node.value}"
        for path in sorted(schema.LSP_SOURCES.rglob("*.py"))
        if path.name != "ids.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value in names
    ]
    assert again == [], "use the constant of lsp/ids.py instead"


def test_the_extension_registers_the_commands_the_servers_lenses_run() -> None:
    # The extension writes its command ids once, in `ClientCommands` of src/ids.ts, and registers
    # each by its key from the handler table of src/extension.ts (`const handlers: Record<…> = {`).
    client = (
        (EXTENSION_SRC / "ids.ts").read_text().split("export const ClientCommands = {", 1)[1].split("}", 1)[0]
    )
    named = dict(re.findall(r"(\w+): '([\w.]+)'", client))
    table = (
        (EXTENSION_SRC / "extension.ts")
        .read_text()
        .split("const handlers: Record<CommandKey, Handler> = {", 1)[1]
    )
    keys = re.findall(r"^    (\w+): ", table.split("\n  };", 1)[0], re.MULTILINE)
    registered = {named[key] for key in keys}
    assert "remem.consolidateSession" in registered  # the patterns see the registrations
    assert set(ids.EXTENSION_COMMANDS) - registered == set()
