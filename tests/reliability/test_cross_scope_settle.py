"""A crash between a review's Global and workspace commits is never seen by a reader.

The review is killed at `consolidation.after-global-commit` (Global new, the workspace old)
once, in a home kept as a template; each test reads a copy of it through one reader — the CLI
without the daemon, the daemon (what the editor and agents over it read), the MCP server's
in-process link, and a daemon that was already running when the review died — and must see
both scopes new, settled without a model call. Then the settle itself is killed at each of
its fault points, and the next reader still sees the whole plan.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.agents.link import InProcessLink
from remem.daemon import faults
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.settle import marks, pending, settle_committing
from remem.daemon.faults import EXIT_CODE
from remem.daemon.home import Home
from remem.daemon.memory import history as history_module
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.api import DaemonApi
from remem.daemon.protocol.consolidation import Status
from remem.daemon.protocol.rpc import AgentContextParams
from remem.daemon.server.runtime import DaemonPaths
from tests.consolidation.conftest import KEY_ENV, both_scopes, configure, write_source
from tests.daemon.helpers import Reached, calls, remem, wait_until
from tests.fake_openai import FakeOpenAI, tool_call
from tests.fifo import released
from tests.memory.history_packs import NEVER

pytestmark = pytest.mark.slow

PLANNED = ("Prefers terse answers.\n", ["prefer-uv"])  # what both_scopes commits
# Where a settle can die after the crash above: the workspace commit, its history, the receipt.
SETTLE_POINTS = [
    "consolidation.after-global-commit",  # Global is planned already: passed again
    "memory.workspace.after-temp-files",
    "memory.workspace.after-journal",
    "memory.workspace.mid-rename",
    "memory.workspace.before-journal-removal",
    "history.before-entry",
    "history.after-objects",
    "history.after-ref",
    "consolidation.after-workspace-commit",
    "consolidation.before-committed-receipt",
    "consolidation.receipt.after-temp-write",
    "consolidation.after-final-receipt",
]


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A folder holding a home whose review died between its two commits (and its project),
    and a copy of it to restore it from: the worker session's place depends on the home's path."""
    base = tmp_path_factory.mktemp("crashed")
    home = Home(base / "home")
    home.ensure_layout()
    (base / "project").mkdir()
    with pytest.MonkeyPatch.context() as env, FakeOpenAI(api_key="sk-test") as fake:
        env.setenv(KEY_ENV, "sk-test")
        env.setenv(NO_DAEMON_ENV, "1")
        env.setenv("DSH_HOME", str(base / "no-dsh-home"))
        env.setenv("REMEM_FAULTPOINT", "consolidation.after-global-commit")
        configure(home, fake, base / "dsh-sessions")
        source = write_source(base / "dsh-sessions", str(base / "project"))
        fake.reply(tool_call(both_scopes(source)))
        died = remem(home, "consolidate", source.id, "--json")
        assert died.returncode == EXIT_CODE, died.stderr
        assert fake.count == 1
    template = base.with_name(base.name + "-template")
    shutil.copytree(base, template, symlinks=True)
    yield base, template


@pytest.fixture
def copy(crashed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Home, Path]]:
    """The crashed home, as the crash left it (with no model to call: a settle needs none)."""
    base, template = crashed
    shutil.rmtree(base)
    shutil.copytree(template, base, symlinks=True)
    home = Home(base / "home")
    monkeypatch.setenv("REMEM_HOME", str(home.root))
    monkeypatch.setenv("DSH_HOME", str(base / "no-dsh-home"))
    monkeypatch.setenv(NO_DAEMON_ENV, "1")
    store = MemoryStore(home)
    half = (store.read_global().content, _names(store, base / "project"))
    assert half == (PLANNED[0], []), "the template is half committed"
    yield home, base / "project"
    if DaemonPaths(home).read_status() is not None:
        remem(home, "daemon", "stop")


def _names(store: MemoryStore, project: Path) -> list[str]:
    return [r.name for r in store.read_workspace(WorkspaceId.from_cwd(project)).records]


def _shown(home: Home, project: Path) -> tuple[str, list[str]]:
    done = remem(home, "memory", "show", "--json", "--cwd", str(project))
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    return shown["global"]["content"], [r["name"] for r in shown["workspace"]["records"]]


def _settled_whole(home: Home, project: Path) -> None:
    """The review is committed, its mark gone, each scope has its one history entry, and the
    workspace the settle created knows its folder."""
    [receipt] = ReceiptStore(home).all()
    assert receipt.status is Status.COMMITTED and receipt.history is not None
    assert pending(home) == []
    store = MemoryStore(home)
    assert (store.read_global().content, _names(store, project)) == PLANNED
    for key in (None, WorkspaceId.from_cwd(project).key):
        assert len(store.history.log(key)) == 1
    assert store.workspace_of(WorkspaceId.from_cwd(project).key).cwd == str(project), "created where it is"


def test_the_cli_without_the_daemon_settles_before_it_reads(copy: tuple[Home, Path]) -> None:
    home, project = copy
    assert _shown(home, project) == PLANNED
    _settled_whole(home, project)


def test_the_daemon_settles_before_it_serves(
    copy: tuple[Home, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project = copy
    monkeypatch.delenv(NO_DAEMON_ENV)
    cwd = {"cwd": str(project)}
    glob, workspace, context = calls(
        home, [("memory/readGlobal", {}), ("memory/readWorkspace", cwd), ("agents/context", cwd)]
    )
    assert (glob["content"], [r["name"] for r in workspace["records"]]) == PLANNED
    assert PLANNED[0] in context["text"] and "prefer-uv" in context["text"]
    _settled_whole(home, project)


def test_an_agent_without_the_daemon_settles_before_it_reads(copy: tuple[Home, Path]) -> None:
    home, project = copy
    api = DaemonApi(InProcessLink(home))
    answer = asyncio.run(api.agent_context(AgentContextParams(cwd=str(project))))
    assert answer.text is not None
    assert PLANNED[0] in answer.text and "prefer-uv" in answer.text
    _settled_whole(home, project)


def test_a_running_daemon_settles_a_review_another_process_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon serves while a `--no-daemon` review dies: the change it sees makes it settle."""
    home, project = Home(tmp_path / "home"), tmp_path / "project"
    home.ensure_layout()
    project.mkdir()
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "no-dsh-home"))
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeOpenAI(api_key="sk-test") as fake:
        configure(home, fake, tmp_path / "dsh-sessions")
        source = write_source(tmp_path / "dsh-sessions", str(project))
        assert remem(home, "daemon", "start").returncode == 0
        try:
            fake.reply(tool_call(both_scopes(source)))
            with monkeypatch.context() as env:
                env.setenv(NO_DAEMON_ENV, "1")
                env.setenv("REMEM_FAULTPOINT", "consolidation.after-global-commit")
                assert remem(home, "consolidate", source.id, "--json").returncode == EXIT_CODE

            def read() -> tuple[str, list[str]]:
                glob, workspace = calls(
                    home, [("memory/readGlobal", {}), ("memory/readWorkspace", {"cwd": str(project)})]
                )
                return glob["content"], [r["name"] for r in workspace["records"]]

            wait_until(lambda: ReceiptStore(home).all()[0].status is Status.COMMITTED)
            assert read() == PLANNED and fake.count == 1
            _settled_whole(home, project)
        finally:
            remem(home, "daemon", "stop")


def test_a_running_daemon_settles_before_the_next_read_not_when_its_watcher_says(
    copy: tuple[Home, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review of another process can sit between its commits while the daemon serves; the
    daemon's watcher hears of it only later, if at all. The read itself must find the mark."""
    home, project = copy
    monkeypatch.delenv(NO_DAEMON_ENV)
    [review] = pending(home)
    hidden = home.root / review
    (marks(home) / review).rename(hidden)  # the daemon starts with nothing to settle
    assert remem(home, "daemon", "start").returncode == 0
    half = calls(home, [("memory/readGlobal", {}), ("memory/readWorkspace", {"cwd": str(project)})])
    assert (half[0]["content"], [r["name"] for r in half[1]["records"]]) == (PLANNED[0], [])
    hidden.rename(marks(home) / review)  # no memory file changes: nothing for the watcher
    cwd = {"cwd": str(project)}
    workspace, glob = calls(home, [("memory/readWorkspace", cwd), ("memory/readGlobal", {})])
    assert (glob["content"], [r["name"] for r in workspace["records"]]) == PLANNED
    _settled_whole(home, project)


def test_the_points_are_those_a_settle_reaches(
    copy: tuple[Home, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, _ = copy
    recorder = Reached()
    monkeypatch.setattr(faults, "_ARMED", (recorder, 0))
    # A merge of the small packs runs at an entry whose commit id (which holds its time) is a
    # multiple of PACK_EVERY: its points are no settle's own, reached one run in 32 otherwise.
    monkeypatch.setattr(history_module, "PACK_EVERY", NEVER)
    [settled] = settle_committing(home)
    assert settled.status is Status.COMMITTED
    assert recorder.crashes() == set(SETTLE_POINTS)


@pytest.mark.parametrize("point", SETTLE_POINTS)
def test_a_settle_killed_at_any_point_is_finished_by_the_next_reader(
    copy: tuple[Home, Path], monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    home, project = copy
    with monkeypatch.context() as env:
        env.setenv("REMEM_FAULTPOINT", point)
        died = remem(home, "memory", "show", "--json", "--cwd", str(project))
    assert died.returncode == EXIT_CODE, died.stderr
    settle_committing(home)  # what the next reader, whichever it is, does first
    _settled_whole(home, project)


@pytest.mark.timeout(30)
def test_a_mark_that_is_a_fifo_is_not_waited_on(copy: tuple[Home, Path]) -> None:
    """The daemon settles before it serves: a FIFO where the mark's workspace is read held it,
    and every command that started it, for good. It is a mark that holds no workspace."""
    home, _ = copy
    [review] = pending(home)
    mark = marks(home) / review
    mark.unlink()
    os.mkfifo(mark)
    with released(mark) as fifo:
        [settled] = settle_committing(home)
    assert not fifo.waited, "it opened the FIFO and waited on it for a writer"
    assert settled.status is Status.COMMITTED and pending(home) == []
