"""What a front end loads: importing the daemon client, and `remem lsp` up to `initialize`;
and what a cold listing's worker process loads.

Neither loads the daemon's own process, handlers, watcher, the MCP server or `remem eval`; the
client is the wire contract and a socket (at most `CLIENT_MODULES` remem modules), and the
language server starts without the consolidation, fork, session-index and memory-store code it
never runs before a feature asks (`python -m tests.contract.imports` prints the counts).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.contract import imports

pytestmark = pytest.mark.slow  # a fresh interpreter, and a language server, per count

NEVER_IN_A_CLIENT = (
    "remem.daemon.server.process",
    "remem.daemon.server.jsonrpc",
    "remem.daemon.server.watcher",
    "remem.daemon.server.memory_methods",
    "remem.daemon.server.session_methods",
    "remem.daemon.server.consolidation_methods",
    "remem.daemon.server.agent_methods",
    "remem.daemon.evaluation",
    "remem.agents",
)

# 16 since fsutil names its publish steps' fault points (`faults`, a stdlib-only leaf); 17 since
# the home refuses a name that is not UTF-8 (`os_names`, another); 18 since the log's cap is a
# module of its own (`log_cap`: a client moves an over-cap log aside before a spawn).
CLIENT_MODULES = 18


def loaded_anything_of(loaded: list[str], packages: tuple[str, ...]) -> list[str]:
    return [m for m in loaded if any(m == p or m.startswith(p + ".") for p in packages)]


def test_importing_the_client_loads_none_of_the_daemons_own_code() -> None:
    loaded = imports.loaded_by_import("remem.daemon.client")
    print(f"import remem.daemon.client: {len(loaded)} remem modules")
    assert "remem.daemon.protocol.rpc" in loaded  # the measurement sees what it loads
    assert loaded_anything_of(loaded, NEVER_IN_A_CLIENT) == []
    assert len(loaded) <= CLIENT_MODULES, loaded


def test_the_language_server_answers_initialize_without_the_daemons_own_code(tmp_path: Path) -> None:
    loaded = imports.loaded_by_lsp_initialize(tmp_path / "home")
    print(f"remem lsp at initialize: {len(loaded)} remem modules")
    assert "remem.lsp.server" in loaded
    assert loaded_anything_of(loaded, NEVER_IN_A_CLIENT) == []
    unwanted = loaded_anything_of(loaded, imports.NOT_AT_INITIALIZE)
    assert [m for m in unwanted if m not in imports.AT_INITIALIZE_ANYWAY] == []


def test_a_cold_listings_worker_loads_the_readers_not_the_daemons_settings_or_wire() -> None:
    """A worker starts per cold listing (decision 0330): every module it imports delays it."""
    loaded = imports.loaded_by_import("remem.daemon.sessions.cold_reads")
    print(f"import remem.daemon.sessions.cold_reads: {len(loaded)} remem modules")
    assert "remem.daemon.sessions.reader" in loaded
    assert "remem.daemon.sessions.formats.claude_code" in loaded
    assert loaded_anything_of(loaded, ("remem.daemon.settings", "remem.daemon.protocol.rpc")) == []
    assert loaded_anything_of(loaded, NEVER_IN_A_CLIENT) == []
