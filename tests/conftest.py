"""Shared fixtures: a fresh REMEM_HOME per test, a store on it, and the CLI without a daemon."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.scratch import process_folder

# Never let a test (or a daemon, editor or harness it starts) list the real ~/.claude or
# ~/.codex sessions of whoever runs the suite: both point into a folder that stays empty. Set at
# import, before any test module copies os.environ for its subprocesses.
_NO_HARNESS_HOME = str(process_folder("remem-tests-no-harness-"))
os.environ["CLAUDE_CONFIG_DIR"] = os.path.join(_NO_HARNESS_HOME, "claude")
os.environ["CODEX_HOME"] = os.path.join(_NO_HARNESS_HOME, "codex")
# A shell that exports the CLI's switch would turn the daemon off in every language server, daemon
# and harness a test module starts with a copy of os.environ taken at import; `no_daemon` sets it
# again for each test, and tests that want it pass `--no-daemon` or set it themselves.
os.environ.pop(NO_DAEMON_ENV, None)


@pytest.fixture(autouse=True)
def no_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI runs in-process by default here; tests/daemon/test_cli_routing.py runs it through
    the daemon and checks that both paths print the same."""
    monkeypatch.setenv(NO_DAEMON_ENV, "1")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    root = tmp_path / "home"
    monkeypatch.setenv("REMEM_HOME", str(root))
    # Never let a test list the real ~/.dsh sessions of whoever runs the suite.
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "no-dsh-home"))
    return Home(root)


NOT_UTF8 = os.fsdecode(b"caf\xe9")  # how Python hands over a Latin-1 argument or folder name


@pytest.fixture
def latin1_folder(tmp_path: Path) -> Path:
    """A folder whose name is not UTF-8, where the file system allows one."""
    folder = tmp_path / NOT_UTF8
    try:
        folder.mkdir()
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    return folder


@pytest.fixture
def store(home: Home) -> MemoryStore:
    return MemoryStore(home.ensure_layout())  # the store lays it out only once it is used


@pytest.fixture
def workspace(tmp_path: Path) -> WorkspaceId:
    project = tmp_path / "My Project"
    project.mkdir()
    return WorkspaceId.from_cwd(project)


E2E_TIMEOUT_S = 900  # an end-to-end test starts code-server and Chromium on a shared machine


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Keep together on one xdist worker (`--dist loadgroup`), in order, the tests that share
    state: the end-to-end tests (one editor at a time, the installed extension built once; each
    may take longer than the suite's default timeout) and the tests of a module whose fixture is
    module-scoped (one language server per module, and sequences such as test_reconnect.py)."""
    for item in items:
        if item.get_closest_marker("e2e") is not None:
            item.add_marker(pytest.mark.xdist_group("e2e"))
            item.add_marker(pytest.mark.timeout(E2E_TIMEOUT_S))
        elif _uses_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.partition("::")[0]))


def _uses_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)  # what pytest resolved for the test; none for doctests
    definitions = info.name2fixturedefs.values() if info is not None else []
    return any(defs and defs[-1].scope == "module" for defs in definitions)
