"""The layers hold: domain code never reaches up into a front end or the server, memory never
into consolidation, the wire protocol into nothing of remem but itself, and front ends only
into the server's public surface; and no modules import each other at run time.

An import that breaks a rule fails here, naming the importer and the imported module. The
imports that break a rule today are listed below as known exceptions, each with its reason and
the step of issue #19 that removes it, so the list can only shrink: an exception that no longer
occurs fails too, until it is deleted from the list.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.contract import imports

DOMAIN = (
    "remem.daemon.memory",
    "remem.daemon.agent_updates",
    "remem.daemon.sessions",
    "remem.daemon.forks",
    "remem.daemon.consolidation",
    "remem.daemon.evaluation",
    "remem.daemon.home",
    "remem.daemon.fsutil",
    "remem.daemon.locks",
    "remem.daemon.faults",
    "remem.daemon.safe_yaml",
    "remem.daemon.swap",
    "remem.daemon.settings",
    "remem.daemon.credentials",
)
SERVER = "remem.daemon.server"
FRONT_ENDS = ("remem.daemon.cli", "remem.daemon.client", "remem.lsp", "remem.agents")
# What of the server a front end may use: where a running daemon's status file, socket and log
# are, the log's cap (a client spawning a daemon moves an over-cap log aside first), and the one
# composition of its handlers (to run them in-process). Everything else there (the handlers
# themselves, the process, the watcher) is the daemon's own.
SERVER_SURFACE = (f"{SERVER}.runtime", f"{SERVER}.log_cap", f"{SERVER}.composition")
PROTOCOL = "remem.daemon.protocol"


@dataclass(frozen=True)
class Rule:
    name: str
    importers: tuple[str, ...]
    forbidden: tuple[str, ...]
    allowed: tuple[str, ...] = ()
    allowed_modules: tuple[str, ...] = ()  # exactly these modules, not what is inside them

    def broken_by(self, importer: str, imported: str) -> bool:
        return (
            within(importer, self.importers)
            and within(imported, self.forbidden)
            and not within(imported, self.allowed)
            and imported not in self.allowed_modules
        )


def within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


RULES = (
    Rule("domain code never imports the server, the CLI, the LSP or MCP", DOMAIN, (SERVER, *FRONT_ENDS)),
    Rule("memory never imports consolidation", ("remem.daemon.memory",), ("remem.daemon.consolidation",)),
    # The package remem.daemon itself is the app's version, which `daemon/hello` carries.
    Rule(
        "the wire protocol imports nothing of remem but itself",
        (PROTOCOL,),
        ("remem",),
        (PROTOCOL,),
        ("remem.daemon",),
    ),
    Rule(
        "front ends use only the server's runtime and its composition", FRONT_ENDS, (SERVER,), SERVER_SURFACE
    ),
    Rule("the language server and the MCP server never import each other", ("remem.lsp",), ("remem.agents",)),
    Rule("the MCP server and the language server never import each other", ("remem.agents",), ("remem.lsp",)),
)

KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("remem.daemon.cli.daemon", f"{SERVER}.process"): (
        "`remem daemon run` is the daemon's entry point and runs the server itself (imported lazily, "
        "by that command only); stays unless the entry point moves into the server package"
    ),
}


def violations() -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    for importer, imported in imports.edges():
        broken = [rule.name for rule in RULES if rule.broken_by(importer, imported)]
        if broken:
            found[(importer, imported)] = broken
    return found


def test_the_graph_is_read_from_the_source() -> None:
    # The walk must see the packages and both kinds of import, or every rule would hold vacuously.
    assert "remem.daemon.protocol.rpc" in imports.imports("remem.daemon.client")  # relative
    assert "remem.daemon.protocol.rpc" in imports.imports("remem.lsp.features.requests")  # absolute
    assert "remem.daemon.server.process" in imports.imports("remem.daemon.cli.daemon")  # lazy
    # An import for type checking only is an edge of the graph, but none at run time.
    assert "remem.daemon.sessions.catalog" in imports.imports("remem.daemon.sessions.memo")
    assert "remem.daemon.sessions.catalog" not in imports.imports(
        "remem.daemon.sessions.memo", at_run_time=True
    )


def test_no_module_imports_itself_back_at_run_time() -> None:
    # The language server is composed in `remem.lsp.compose`; the features import the server's
    # type from `remem.lsp.server`, which imports none of them.
    assert imports.cycles("remem") == [], "these modules import each other at run time"


def test_no_import_breaks_a_layer_beyond_the_known_exceptions() -> None:
    new = {f"{a} -> {b}": rules for (a, b), rules in violations().items() if (a, b) not in KNOWN_EXCEPTIONS}
    assert new == {}, "these imports break a layer (tests/contract/test_layering.py lists the rules)"


def test_every_known_exception_still_occurs() -> None:
    gone = sorted(f"{a} -> {b}" for a, b in KNOWN_EXCEPTIONS.keys() - violations().keys())
    assert gone == [], "these exceptions no longer occur: delete them from KNOWN_EXCEPTIONS"


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_each_rule_names_existing_packages(rule: Rule) -> None:
    known = imports.modules()
    for package in (*rule.importers, *rule.forbidden, *rule.allowed):
        assert any(within(module, (package,)) for module in known), f"{package} is no remem module"
