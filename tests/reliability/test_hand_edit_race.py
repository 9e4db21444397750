"""An editor saving memory files by hand while remem commits to them never loses a saved line.

An editor process saves the file the way editors do (a temp file renamed over it, or an in-place
rewrite), appending one line per save and checking that its previous line survived; meanwhile
this process commits its own lines through remem with compare-and-swap, in-process or through
the daemon. Each race runs `REMEM_RACE_SECONDS` (default 5; set 120 for the long variant).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.record import render_record
from remem.daemon.memory.store import MemoryInvalid, MemoryStore
from remem.daemon.protocol.memory import PutChange, Record
from tests.daemon.conftest import home  # noqa: F401 - the home whose daemon is always stopped
from tests.reliability.editor import KEEP, STYLES

SECONDS = float(os.environ.get("REMEM_RACE_SECONDS", "5"))
REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Outcome:
    saves: int
    commits: int
    lost: list[int]  # hand saves whose line is gone once the race is over (`editor.main`)


def race(path: Path, style: str, commit_line: Callable[[int], bool], pause: float = 0.005) -> Outcome:
    """Run an editor process against `commit_line(n)` for SECONDS."""
    stop = path.parent / "stop-editing"
    command = [sys.executable, "-m", "tests.reliability.editor", str(path), style, str(pause), str(stop)]
    editor = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    commits = 0
    deadline = time.monotonic() + SECONDS
    try:
        while time.monotonic() < deadline:
            commits += commit_line(commits + 1)
    finally:
        stop.touch()
        out, _ = editor.communicate(timeout=60)
    stop.unlink()
    report = json.loads(out)
    return Outcome(report["saves"], commits, report["lost"])


def with_line(text: str, n: int) -> str:
    """`text` plus `agent-n`, without the agent's lines older than KEEP commits."""
    old = {f"agent-{k}\n" for k in range(1, n - KEEP + 1)}
    return "".join(line for line in text.splitlines(keepends=True) if line not in old) + f"agent-{n}\n"


def _record(content: str) -> Record:
    return Record(name="notes", description="Hand and agent notes", type="project", content=content)


@pytest.mark.slow
@pytest.mark.parametrize("style", STYLES)
def test_global_hand_saves_survive_commits(store: MemoryStore, style: str) -> None:
    store.home.global_file.write_text("Shared notes.\n")

    def commit_line(n: int) -> bool:
        current = store.read_global()
        return store.replace_global(current.revision, with_line(current.content, n)).status == "committed"

    outcome = race(store.home.global_file, style, commit_line)
    assert outcome.saves > 100 and outcome.commits > 20, outcome
    assert outcome.lost == []


@pytest.mark.slow
@pytest.mark.parametrize("style", STYLES)
def test_record_hand_saves_survive_commits(store: MemoryStore, workspace: WorkspaceId, style: str) -> None:
    folder = store.folder(workspace)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "notes.md"
    path.write_text(render_record(_record("Shared notes.\n")))

    def commit_line(n: int) -> bool:
        try:
            snapshot = store.read_workspace(workspace)
        except MemoryInvalid:  # caught an in-place save half-written; an agent would retry too
            return False
        [notes] = [r for r in snapshot.records if r.name == "notes"]
        change = PutChange(action="put", record=_record(with_line(notes.content, n)))
        return store.commit_workspace(workspace, snapshot.revision, [change]).status == "committed"

    outcome = race(path, style, commit_line, pause=0.02)  # a workspace commit takes longer
    assert outcome.saves > 50 and outcome.commits > 20, outcome
    assert outcome.lost == []


@pytest.mark.slow
@pytest.mark.parametrize("style", STYLES)
def test_global_hand_saves_survive_daemon_commits(home: Home, style: str) -> None:  # noqa: F811
    home.ensure_layout()
    home.global_file.write_text("Shared notes.\n")
    loop = asyncio.new_event_loop()
    client = loop.run_until_complete(AsyncDaemonClient.open(home))

    def commit_line(n: int) -> bool:
        async def once() -> bool:
            current = await client.call("memory/readGlobal", {})
            params = {"expectedRevision": current["revision"], "content": with_line(current["content"], n)}
            return (await client.call("memory/replaceGlobal", params))["status"] == "committed"

        return loop.run_until_complete(once())

    try:
        outcome = race(home.global_file, style, commit_line)
    finally:
        loop.run_until_complete(client.close())
        loop.close()
    assert outcome.saves > 100 and outcome.commits > 20, outcome
    assert outcome.lost == []
