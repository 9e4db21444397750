"""The `remem` command line: one group per capability, `--json` on every command."""

from __future__ import annotations

import click

from .. import __version__
from ..home import Home
from .backend import NO_DAEMON_ENV, Backend
from .consolidate import consolidate, receipts, settings
from .daemon import daemon
from .memory import memory
from .sessions import sessions


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--home",
    type=click.Path(file_okay=False),
    envvar="REMEM_HOME",
    help="remem's home folder (default: $REMEM_HOME, else ~/.remem).",
)
@click.option(
    "--no-daemon",
    is_flag=True,
    envvar=NO_DAEMON_ENV,
    help=f"Run in this process instead of through the daemon (also ${NO_DAEMON_ENV}=1).",
)
@click.version_option(__version__, prog_name="remem")
@click.pass_context
def cli(ctx: click.Context, home: str | None, no_daemon: bool) -> None:
    """remem: validated, evidenced, recoverable long-term memory for coding agents."""
    ctx.obj = Backend(Home.resolve(home), use_daemon=not no_daemon)


@cli.command()
@click.pass_obj
def lsp(backend: Backend) -> None:
    """Run the language server on stdio (what the editor extension starts)."""
    from remem.lsp.server import create_server  # the CLI need not load pygls otherwise

    create_server(backend.home).start_io()


@cli.command()
@click.option(
    "--cwd",
    type=click.Path(exists=True, file_okay=False),
    help="The project whose memory agents get (default: the root the MCP client declares, "
    "else the current folder).",
)
@click.pass_obj
def mcp(backend: Backend, cwd: str | None) -> None:
    """Run the MCP server for agents on stdio (memory_context, memory_read, memory_update)."""
    from remem.agents.server import serve  # the CLI need not load the MCP SDK otherwise

    serve(backend.home, cwd=cwd, use_daemon=backend.use_daemon)


cli.add_command(consolidate)
cli.add_command(daemon)
cli.add_command(memory)
cli.add_command(receipts)
cli.add_command(sessions)
cli.add_command(settings)


def main() -> None:
    cli(prog_name="remem")
