"""A commit through the daemon (`memory/replaceGlobal`, `commitWorkspace`, `regenerateIndex`,
`revert`) waits 5 s at most for a scope's lock another process keeps (a `--no-daemon` writer
suspended with Ctrl-Z), then is refused SCOPE_BUSY with nothing written, where it waited for
good, holding the scope's worker thread and turn (and `remem daemon stop` ended in SIGKILL).
Its refusal says nothing was written."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from remem.daemon import locks
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.rpc import SCOPE_BUSY, RpcError

from .helpers import calls, remem

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
WROTE_NOTHING = "nothing was written; end that process, then try again"
NEVER_SECONDS = 60  # far past the 5 s bound: only a wait that never ends reaches it
RECORD = {"name": "style", "description": "How to answer", "type": "feedback", "content": "Tersely.\n"}


def test_a_commit_through_the_daemon_behind_a_held_lock_is_refused_busy(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    project = tmp_path / "project"
    project.mkdir()
    workspace = WorkspaceId.from_cwd(str(project))
    text = tmp_path / "global.md"
    text.write_text("Answer briefly.\n")
    made = remem(home, "memory", "replace-global", "--expected-revision", EMPTY, "--file", str(text))
    assert made.returncode == 0, made.stderr  # the daemon is started, Global has an entry
    put = {"action": "put", "record": RECORD}
    [committed] = calls(
        home, [("memory/commitWorkspace", {"cwd": str(project), "expectedRevision": EMPTY, "changes": [put]})]
    )
    [entry] = calls(home, [("memory/log", {"cwd": None, "limit": 1})])[0]["entries"]
    before = home.global_file.read_bytes(), _records(home, workspace)
    revision = _revision(home)  # read before the locks are held: this process would wait on itself
    text.write_text("Answer in French.\n")

    with _held(home.locks / "global.lock"), _held(home.locks / f"ws-{workspace.key}.lock"):
        refused = _answers(
            home,
            [
                ("memory/replaceGlobal", {"expectedRevision": revision, "content": "Answer in French.\n"}),
                ("memory/commitWorkspace", {"cwd": str(project), "expectedRevision": committed["revision"],
                                            "changes": [{"action": "delete", "name": "style"}]}),
                ("memory/regenerateIndex", {"cwd": str(project)}),
                ("memory/revert", {"entry": entry["id"], "before": True}),
            ],
        )  # fmt: skip

    for answer in refused:
        assert isinstance(answer, RpcError) and answer.code == SCOPE_BUSY, answer
        assert WROTE_NOTHING in answer.message, answer.message
    assert len(refused) == 4
    assert (home.global_file.read_bytes(), _records(home, workspace)) == before, "something was written"

    # The daemon serves on: the scopes' turns and threads were let go.
    again = remem(home, "memory", "replace-global", "--expected-revision", revision, "--file", str(text))
    assert again.returncode == 0, again.stderr
    assert home.global_file.read_text() == "Answer in French.\n"
    stopped = remem(home, "daemon", "stop")
    assert stopped.returncode == 0 and "did not exit" not in stopped.stdout + stopped.stderr, stopped


def _answers(home: Home, requests: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each request's answer or error, in order on one connection; "waiting" for one still
    unanswered `NEVER_SECONDS` on (a wait for good, which would hang the test)."""

    async def run() -> list[Any]:
        client = await AsyncDaemonClient.open(home)
        answers: list[Any] = []
        try:
            for method, params in requests:
                try:
                    answers.append(await asyncio.wait_for(client.call(method, params), NEVER_SECONDS))
                except RpcError as exc:
                    answers.append(exc)
                except TimeoutError:
                    answers.append("waiting")
        finally:
            await client.close()
        return answers

    return asyncio.run(run())


@contextmanager
def _held(lock: Path) -> Iterator[None]:
    """`lock` held as another process holds it (flock is per open file), for the block."""
    handle = locks.try_file_lock(lock)
    assert handle is not None, f"{lock} is held already"
    try:
        yield
    finally:
        handle.release()


def _revision(home: Home) -> str:
    return MemoryStore(home, history=False).read_global().revision


def _records(home: Home, workspace: WorkspaceId) -> dict[str, bytes]:
    folder = home.workspaces / workspace.key
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}
