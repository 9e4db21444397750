"""remem's import graph, read from the source (every `import`, lazy ones in functions too), and
what importing a module or starting `remem lsp` actually loads."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path

REPO = Path(__file__).parents[2]
# The import name of each source folder (pyproject.toml's package-dir).
PACKAGES = {"remem.daemon": REPO / "daemon", "remem.lsp": REPO / "lsp", "remem.agents": REPO / "agents"}


@cache
def modules() -> dict[str, Path]:
    """Every remem module and the file it is read from."""
    found = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = [part for part in path.relative_to(folder).with_suffix("").parts if part != "__init__"]
            found[".".join([package, *parts])] = path
    return found


def imports(module: str, *, at_run_time: bool = False) -> set[str]:
    """The remem modules `module` imports, anywhere in it; `at_run_time`: not those imported
    only for type checking (under `if TYPE_CHECKING:`)."""
    path = modules()[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in _nodes(ast.parse(path.read_text()), at_run_time):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(package, node.level, node.module)
            # `from pkg import mod` imports the module pkg.mod; `from mod import name`, mod itself.
            found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in modules() else base for a in node.names)
    return {name for name in found if name in modules()}


def _nodes(tree: ast.AST, at_run_time: bool) -> Iterator[ast.AST]:
    """Every node of `tree`, without the bodies of `if TYPE_CHECKING:` when `at_run_time`."""
    for node in ast.iter_child_nodes(tree):
        yield node
        if at_run_time and isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from (n for part in node.orelse for n in (part, *_nodes(part, at_run_time)))
        else:
            yield from _nodes(node, at_run_time)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(package: str, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    parts = package.split(".")[: len(package.split(".")) - (level - 1)]
    return ".".join([*parts, *([module] if module else [])])


def edges(*, at_run_time: bool = False) -> Iterator[tuple[str, str]]:
    for module in sorted(modules()):
        for imported in sorted(imports(module, at_run_time=at_run_time)):
            yield module, imported


def cycles(package: str) -> list[list[str]]:
    """The import cycles among `package`'s modules at run time: each strongly connected group
    of two or more modules (Tarjan's algorithm), sorted."""
    graph: dict[str, set[str]] = {m: set() for m in modules() if m == package or m.startswith(package + ".")}
    for importer, imported in edges(at_run_time=True):
        if importer in graph and imported in graph:
            graph[importer].add(imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(graph[module]):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def loaded_by_import(module: str) -> list[str]:
    """The remem modules a fresh interpreter has loaded after `import module`."""
    listing = "[m for m in sys.modules if m.startswith('remem.')]"
    script = f"import sys, json, {module}; print(json.dumps({listing}))"
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, check=True).stdout
    return sorted(json.loads(loaded))


def loaded_by_lsp_initialize(home: Path) -> list[str]:
    """The remem modules `remem lsp` has imported by the time it answers `initialize`: the
    server runs under `-X importtime`, which logs each import as it happens, and is stopped as
    soon as the answer arrives (no `initialized`, so no daemon is started)."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"processId": None, "capabilities": {}},
    }
    body = json.dumps(request).encode()
    command = [sys.executable, "-X", "importtime", "-m", "remem.daemon", "--home", str(home), "lsp"]
    env = {**os.environ, "REMEM_HOME": str(home)}
    # The log goes to a file: a pipe nobody reads until the answer could fill and stall the server.
    with (
        tempfile.TemporaryFile() as log_file,
        subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file, env=env
        ) as server,
    ):
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        server.stdin.flush()
        answer = _read_message(server.stdout)
        server.kill()
        server.wait()
        log_file.seek(0)
        log = log_file.read().decode(errors="replace")
    assert answer.get("id") == 1 and "result" in answer, f"remem lsp did not answer initialize: {answer}"
    loaded = {line.rpartition("|")[2].strip() for line in log.splitlines() if line.startswith("import time:")}
    return sorted(name for name in loaded if name.startswith("remem."))


def _read_message(stream: object) -> dict[str, object]:
    headers = {}
    while (line := stream.readline().strip()) != b"":  # type: ignore[attr-defined]
        name, _, value = line.decode().partition(":")
        headers[name.lower()] = value.strip()
    return json.loads(stream.read(int(headers["content-length"])))  # type: ignore[attr-defined]


# What `remem lsp` must not load before a feature asks; the memory store loads the history's
# libgit2 binding, a fifth of the server's start.
NOT_AT_INITIALIZE = (
    "remem.daemon.consolidation",
    "remem.daemon.forks",
    "remem.daemon.sessions.index",
    "remem.daemon.memory.store",
    "remem.daemon.memory.history",
)
# Of those, what the server's consolidation feature needs to define its answers: the words of a
# review's change (pydantic and the protocol only, nothing of the runner, the worker or openai).
AT_INITIALIZE_ANYWAY = ("remem.daemon.consolidation", "remem.daemon.consolidation.changes")


def main() -> int:
    """`python -m tests.contract.imports`: the import footprints docs/benchmarks.md reports."""
    client = loaded_by_import("remem.daemon.client")
    with tempfile.TemporaryDirectory(prefix="remem-footprint-") as folder:
        lsp = loaded_by_lsp_initialize(Path(folder) / "home")
    print(f"import remem.daemon.client: {len(client)} remem modules")
    print(f"remem lsp at initialize: {len(lsp)} remem modules")
    for area in NOT_AT_INITIALIZE:
        print(f"  of them {area}*: {sum(m.startswith(area) for m in lsp)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
