"""Fixtures of the end-to-end tests: the toolchain, the installed extension, a seeded home, a workbench.

Without the toolchain these tests skip and say what is missing — except when REMEM_E2E=required
(as .ci/run sets), where a missing toolchain is a failure, never a silent skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from scripts.codeserver import (
    REPO,
    CodeServer,
    build_vsix,
    editor_env,
    install_extension,
    remem_executable,
    short_scratch,
    stop_daemon,
    workbench_settings,
)
from tests.consolidation.conftest import KEY_ENV, OLD, Source, configure, write_source
from tests.fake_openai import FakeOpenAI
from tests.sessions.factory import (
    SessionSpec,
    build_session,
    fork_session,
    subagent_session,
    write_session,
)

from .harness import Tools, Workbench, find_tools, open_browser, open_workbench, unavailable_reason

REQUIRED_ENV = "REMEM_E2E"
ARTIFACTS = REPO / "test-artifacts" / "e2e"
MAIN_SEED, MAIN_TURNS = 11, 4


def unavailable(reason: str) -> None:
    """Skip with `reason`, or fail when the environment says these tests must run."""
    if os.environ.get(REQUIRED_ENV) == "required":
        pytest.fail(f"{REQUIRED_ENV}=required, but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def tools() -> Tools:
    found, missing = find_tools()
    if found is None:
        unavailable(unavailable_reason(missing))
    assert found is not None
    return found


@pytest.fixture(scope="session")
def extensions_dir(tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packaged extension (.vsix), installed once into a fresh extensions folder."""
    folder = tmp_path_factory.mktemp("extensions")
    with short_scratch() as scratch:
        install_extension(tools.editor, build_vsix(), folder, scratch)
    return folder


@dataclass
class Scenario:
    """A home with a workspace, its sessions and a fake model, as the workbench will see them."""

    home: Home
    project: Path
    root: Path
    fake: FakeOpenAI
    main: Source
    fork: str
    subagent: str
    orphan: str

    def tree(self) -> list[dict[str, Any]]:
        """The daemon's own tree of the workspace (computed in-process), to compare the view with."""
        return list(_cli("sessions", "tree", "--cwd", str(self.project))["nodes"])

    def turns(self, session: str) -> list[dict[str, Any]]:
        return list(_cli("sessions", "turns", session)["turns"])

    def node(self, session: str) -> dict[str, Any]:
        return next(n for n in self.tree() if n["id"] == session)

    def consolidate(self, session: str) -> None:
        """`remem consolidate` of `session`, through the daemon the workbench started, with the fake model."""
        command = [remem_executable(), "consolidate", session, "--json"]
        subprocess.run(command, check=True, capture_output=True, text=True)


def _cli(*args: str) -> Any:
    """`remem ... --json` in-process (no daemon), on the test's home."""
    command = [remem_executable(), *args, "--json"]
    out = subprocess.run(
        command, env={**os.environ, NO_DAEMON_ENV: "1"}, check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout)


def _write_old(root: Path, draft: Any) -> str:
    path = write_session(root, draft)
    os.utime(path, (OLD, OLD))  # long finished: not live, so it can be consolidated and branched
    return str(draft.header.id)


@pytest.fixture
def scenario(home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scenario]:
    """A workspace with a main session (4 turns), a fork after turn 2, a subagent and an orphan."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    project = tmp_path / "project"
    project.mkdir()
    root = tmp_path / "dsh-sessions"
    with FakeOpenAI(api_key="sk-test") as fake:
        configure(home, fake, root, timeout_seconds=30)
        with home.settings_file.open("a") as settings:
            settings.write("daemon:\n  idle_minutes: 5\n")  # a safety net if a test run is killed
        cwd = str(project)
        main = write_source(root, cwd, seed=MAIN_SEED, turns=MAIN_TURNS)
        main_draft = build_session(SessionSpec(seed=MAIN_SEED, turns=MAIN_TURNS, cwd=cwd))
        assert main_draft.header.id == main.id  # the factory is a pure function of the seed
        fork = _write_old(
            root, fork_session(main_draft, SessionSpec(seed=12, turns=2, cwd=cwd), after_turn=2)
        )
        subagent = _write_old(root, subagent_session(main_draft, SessionSpec(seed=13, turns=1, cwd=cwd)))
        # The parent of this fork is never written: the tree must show it as an orphan.
        lost_parent = build_session(SessionSpec(seed=21, turns=3, cwd=cwd))
        orphan = _write_old(
            root, fork_session(lost_parent, SessionSpec(seed=22, turns=1, cwd=cwd), after_turn=1)
        )
        yield Scenario(home, project, root, fake, main, fork, subagent, orphan)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_FAILED] = report.failed
    return report


_FAILED = pytest.StashKey[bool]()


@pytest.fixture
def workbench(
    tools: Tools,
    extensions_dir: Path,
    scenario: Scenario,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> Iterator[Workbench]:
    """code-server with the extension and the scenario's project open in headless Chromium."""
    artifacts = ARTIFACTS / request.node.name
    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.mkdir(parents=True)
    with short_scratch() as scratch:
        server = CodeServer(
            tools.editor,
            extensions_dir,
            tmp_path / "user-data",
            scratch,
            editor_env(dict(os.environ)),  # the editor's language server starts the daemon
            workbench_settings(remem_executable()),
        )
        try:
            with open_browser(tools, tmp_path / "chromium") as context:
                bench = open_workbench(context, server, scenario.project, artifacts)
                yield bench
                if request.node.stash.get(_FAILED, False):
                    bench.screenshot("failure")
        finally:
            server.stop()
            stop_daemon(scenario.home)
            _SHOT_FOLDERS.append(artifacts)


_SHOT_FOLDERS: list[Path] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _SHOT_FOLDERS:
        terminalreporter.write_line(f"e2e screenshots of {len(_SHOT_FOLDERS)} scenario(s) in {ARTIFACTS}")
