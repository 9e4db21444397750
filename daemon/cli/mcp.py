"""`remem mcp`: the MCP server for agents on stdio, or how to wire it into a harness."""

from __future__ import annotations

import click

from remem.agents.wiring import EVERY_HARNESS, HARNESSES, Unwirable, this_launch, wiring_json, wiring_text

from . import need_stdio
from .arguments import utf8_folder
from .backend import Backend
from .output import Command, emit_json, fail, say

PRINT_CONFIG = "--print-config"


@click.command(cls=Command, json_with=PRINT_CONFIG)
@click.option(
    "--cwd",
    type=click.Path(exists=True, file_okay=False),
    help="The project whose memory agents get (default: the root the MCP client declares, "
    "else the current folder).",
)
@click.option(
    PRINT_CONFIG,
    is_flag=True,
    help="Print how to wire this server into Claude Code and Codex, instead of serving.",
)
@click.option(
    "--harness",
    type=click.Choice([*HARNESSES, EVERY_HARNESS]),
    help=f"With --print-config: the harness to wire (default: {EVERY_HARNESS}).",
)
@click.option("--json", "as_json", is_flag=True, help="With --print-config: print machine-readable JSON.")
@click.pass_obj
def mcp(backend: Backend, cwd: str | None, print_config: bool, harness: str | None, as_json: bool) -> None:
    """Run the MCP server for agents on stdio (memory_context, memory_read, memory_update,
    memory_history)."""
    folder = None if cwd is None else utf8_folder(cwd)
    if print_config:
        _print_wiring(backend, folder, harness or EVERY_HARNESS, as_json)
        return
    if harness is not None or as_json:
        raise click.UsageError("--harness and --json go with --print-config; the server itself takes neither")
    need_stdio(
        "mcp",
        "MCP client",
        "remem mcp is started by your agent harness over stdio; to wire it: `remem mcp --print-config`",
    )
    from remem.agents.server import serve  # the CLI need not load the MCP SDK otherwise

    serve(backend.home, cwd=folder, use_daemon=backend.use_daemon)


def _print_wiring(backend: Backend, cwd: str | None, harness: str, as_json: bool) -> None:
    """`remem mcp --print-config`: what starts this very server, as each harness is told it."""
    backend.home.refuse_non_utf8_name()  # a config file holds the home as UTF-8 text
    harnesses = HARNESSES if harness == EVERY_HARNESS else (harness,)
    try:
        launch = this_launch(backend.home, use_daemon=backend.use_daemon, cwd=cwd)
        if as_json:
            emit_json(wiring_json(launch, harnesses))
        else:
            say(wiring_text(launch, harnesses))
    except Unwirable as exc:
        fail(str(exc))
