"""A call that memory does not answer is answered all the same: a stopped daemon held the agent's
tool call until its harness gave up (Claude Code waits for hours), and so did a scope's lock that
another process kept, the agent lock or the store's."""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import mcp_types as types
import pytest

from remem.agents.limits import CALL_SECONDS_ENV
from remem.daemon.agent_updates.audit import AuditTrail, scope_name
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import PutChange
from remem.daemon.server.runtime import DaemonPaths
from tests.cli_process import remem
from tests.scratch import hooked_pythonpath
from tests.waiting import until

from .conftest import EMPTY, agent, put, text_of

pytestmark = pytest.mark.asyncio
MODES = pytest.mark.parametrize("options", [(), ("--no-daemon",)], ids=["daemon", "no-daemon"])


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@contextmanager
def held(lock: Path) -> Iterator[None]:
    """`lock` held by another open file, as another process holds it."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def serving(home: Home) -> int:
    """The pid of a daemon started for `home` before the agent's server: a call's deadline is then
    raced by the call alone, where a daemon's start within it took longer on a loaded machine."""
    started = remem(home, "daemon", "start", daemon=True)
    assert started.returncode == 0, started.stderr
    status = DaemonPaths(home, layout=False).read_status()
    assert status is not None, "`remem daemon start` returns once the daemon serves"
    return status.pid


def _refusal(result: types.CallToolResult, starts: str, says: str) -> str:
    """The text of `result`, an error that starts with `starts` and says `says`."""
    assert result.is_error
    message = text_of(result)
    assert message.startswith(starts) and says in message, message
    return message


async def test_a_stopped_daemon_is_said_within_the_deadline_with_the_write_uncertain(
    home: Home, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CALL_SECONDS_ENV, "2")
    pid = serving(home)
    async with agent(home, project) as session:
        await session.context()
        with stopped(pid):
            result = await session.update(put("one"))
    _refusal(
        result,
        "remem's memory service did not answer within 2 s",
        "may or may not have been applied: call memory_context to re-read memory",
    )


@MODES
# The agent lock another agent's update holds; the store's lock a `remem memory` command run
# with --no-daemon writes under, which the daemon was blamed for, and waited for without end.
@pytest.mark.parametrize("lock", ["agent-ws-{key}.lock", "ws-{key}.lock"], ids=["agent-lock", "store-lock"])
async def test_a_lock_another_process_keeps_is_said_and_nothing_is_written(
    home: Home, project: Path, workspace: WorkspaceId, options: tuple[str, ...], lock: str
) -> None:
    async with agent(home, project, options=options) as session:
        await session.context()
        with held(home.locks / lock.format(key=workspace.key)):
            refused = await session.update(put("one"))
        message = _refusal(refused, "Another remem process is holding this memory", "Nothing was written")
        assert workspace.key not in message and str(home.root) not in message, message
        assert not (home.workspaces / workspace.key / "one.md").exists()
        committed = await session.update(put("one"))  # nothing was written: the same change goes
    assert not committed.is_error, text_of(committed)


# A bounded take of a lock tries it without blocking, which /proc/locks does not show: the
# daemon marks each lock it tries so in the folder $REMEM_TEST_TRIED names.
TRIED_ENV = "REMEM_TEST_TRIED"
_TRIES_MARKED = f"""
import os
from pathlib import Path
from remem.daemon.memory import store

_take = store._bounded_take


def _marked_take(path, own, *, within, shared):
    Path(os.environ["{TRIED_ENV}"], path.name).touch()
    return _take(path, own, within=within, shared=shared)


store._bounded_take = _marked_take
"""


async def test_memory_history_is_answered_within_one_deadline_for_both_its_reads(
    home: Home, project: Path, workspace: WorkspaceId, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """memory_history reads two histories, this project's then Global's, each a call to the
    daemon: each had a deadline of its own, so the tool call could wait twice as long as
    REMEM_MCP_CALL_SECONDS promises. Each read is kept by its scope's lock, another process's
    (a `--no-daemon` writer), for 3 s: under the 5 s deadline alone, past it together."""
    monkeypatch.setenv(CALL_SECONDS_ENV, "5")
    tried = tmp_path / "tried"
    tried.mkdir()
    monkeypatch.setenv(TRIED_ENV, str(tried))
    monkeypatch.setenv("PYTHONPATH", hooked_pythonpath(_TRIES_MARKED, "remem-tries-marked-"))
    serving(home)
    async with agent(home, project) as session:
        await session.context()
        assert not (await session.update(put("one"))).is_error
        workspace_lock, global_lock = home.locks / f"ws-{workspace.key}.lock", home.locks / "global.lock"
        with held(global_lock):
            with held(workspace_lock):
                for mark in tried.iterdir():  # the marks of the context's and the update's takes
                    mark.unlink()
                asked = asyncio.create_task(session.call("memory_history"))
                await until((tried / workspace_lock.name).exists, what="the project's read")
                await asyncio.sleep(3)  # how long the read is kept, not a wait for anything
            await until((tried / global_lock.name).exists, what="Global's read")
            await asyncio.sleep(3)
        result = await asked
    _refusal(result, "remem's memory service did not answer within 5 s", "call memory_context")


@pytest.mark.parametrize("tool", ["memory_context", "memory_update", "memory_history"])
async def test_a_read_of_global_memory_another_process_keeps_locked_is_said(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, tool: str
) -> None:
    """memory_context's reads, memory_update's read of Global (to warn of what the context
    then leaves out), and memory_history's bringing Global's history up to date, waited for the
    lock without end: the agent heard only that memory did not answer, as if the daemon were
    stopped or stuck, and the daemon's worker thread stayed stuck behind the lock."""
    store.replace_global(EMPTY, "Answer tersely.\n")
    async with agent(home, project) as session:
        await session.context()
        with held(home.locks / "global.lock"):
            home.global_file.write_text("Answer in French.\n")  # as the process holding the lock wrote
            refused = await (session.update(put("one")) if tool == "memory_update" else session.call(tool))
        message = _refusal(refused, "Another remem process is holding this memory", "Nothing was written")
        assert str(home.root) not in message, message
        assert not (store.folder(workspace) / "one.md").exists()
        assert "Answer in French." in await session.context()  # let go: memory is read again


async def test_interrupted_updates_whose_locks_other_processes_keep_do_not_stop_the_daemon(
    home: Home, project: Path, workspace: WorkspaceId
) -> None:
    """The daemon settles what a crashed update left before it serves, and waited for each
    scope's agent lock another process kept (an update run with --no-daemon, stopped in its
    work), without end, then 5 s a scope, one after another: five such scopes kept the first
    memory_context from an answer within its deadline. Each is settled by its next update."""
    scope = scope_name(workspace.key)
    others = [scope_name(f"other-{letter * 16}") for letter in "abcd"]
    audit = home.memory / "audit"
    audit.mkdir(parents=True)
    for each in [scope, *others]:
        (audit / f".intent-{each}.json").write_text("{not json")
    async with agent(home, project) as session:
        with ExitStack() as locks:
            for each in [scope, *others]:
                locks.enter_context(held(AuditTrail(home).lock_path(each)))
            context = await session.call("memory_context")
        assert not context.is_error, text_of(context)
        log = DaemonPaths(home, layout=False).log.read_text()
        for each in [scope, *others]:
            said = f"the interrupted agent update of {each} is left to its next update"
            assert f"{said}: another remem process holds" in log, log
        assert not (await session.update(put("one"))).is_error
    assert not (audit / f".intent-{scope}.json").exists(), "the update settled it first"


@MODES
@pytest.mark.parametrize(
    ("command", "lock_name"),
    [
        (("context", "--cwd", "{project}"), "global.lock"),
        (("log", "--global"), "global.lock"),
        (("show", "--cwd", "{project}"), "global.lock"),
        (("show", "--cwd", "{project}"), "ws-{key}.lock"),
    ],
    ids=["context", "log", "show-global", "show-workspace"],
)
async def test_a_memory_read_whose_lock_another_process_keeps_is_said_by_the_cli(
    home: Home,
    store: MemoryStore,
    project: Path,
    workspace: WorkspaceId,
    options: tuple[str, ...],
    command: tuple[str, ...],
    lock_name: str,
) -> None:
    """`remem memory context` (a harness's hook runs it, decision 0538), `remem memory log` and
    `remem memory show` (Global's read, then the workspace's) waited for a scope's lock as long
    as another process kept it; a bounded wait's refusal is said as the lock held, not as a bug
    in remem."""
    store.replace_global(EMPTY, "Answer tersely.\n")
    store.commit_workspace(workspace, EMPTY, [PutChange.model_validate(put("one"))])
    lock = home.locks / lock_name.format(key=workspace.key)
    args = [word.format(project=project) for word in command]
    with held(lock):
        ran = await asyncio.to_thread(remem, home, *options, "memory", *args, daemon=True)
    assert ran.returncode == 1, (ran.returncode, ran.stderr)
    assert ran.stderr.startswith(f"remem: another remem process writing this memory has held {lock}"), (
        ran.stderr
    )
    assert "end that process, then try again" in ran.stderr, ran.stderr
