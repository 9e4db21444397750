"""An editor saving memory files by hand while remem commits to them never loses a saved line.

An editor process saves the file the way editors do (a temp file renamed over it, or an in-place
rewrite), appending one line per save; another commits its own lines through remem with
compare-and-swap, in-process or through the daemon. Every hand-written line must survive.
Each race runs `REMEM_RACE_SECONDS` (default 5; set 120 for the long variant).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.memory.batch import PutChange
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.record import Record, render_record
from remem.daemon.memory.store import MemoryInvalid, MemoryStore
from tests.daemon.conftest import home  # noqa: F401 - the home whose daemon is always stopped

SECONDS = float(os.environ.get("REMEM_RACE_SECONDS", "5"))
STYLES = ["rename", "in-place"]
REPO = Path(__file__).resolve().parents[2]


def race(path: Path, style: str, commit_line: Callable[[int], bool], pause: float = 0.005) -> tuple[int, int]:
    """Run an editor process against `commit_line(n)` for SECONDS; return (saves, commits)."""
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
    return int(out), commits


def kept_text(path: Path) -> str:
    """The file and any copy kept beside it when two saves met one exchange (docs/decisions/0090)."""
    return "".join(p.read_text() for p in [path, *path.parent.glob(f"{path.name}.unmerged-*")])


def lost_hand_lines(text: str, saves: int) -> list[str]:
    lines = set(text.splitlines())
    return [f"hand-{n}" for n in range(1, saves + 1) if f"hand-{n}" not in lines]


def _record(content: str) -> Record:
    return Record(name="notes", description="Hand and agent notes", type="project", content=content)


@pytest.mark.slow
@pytest.mark.parametrize("style", STYLES)
def test_global_hand_saves_survive_commits(store: MemoryStore, style: str) -> None:
    store.home.global_file.write_text("Shared notes.\n")

    def commit_line(n: int) -> bool:
        current = store.read_global()
        return store.replace_global(current.revision, f"{current.content}agent-{n}\n").status == "committed"

    saves, commits = race(store.home.global_file, style, commit_line)
    assert saves > 100 and commits > 20, (saves, commits)
    assert lost_hand_lines(kept_text(store.home.global_file), saves) == []


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
        change = PutChange(action="put", record=_record(f"{notes.content}agent-{n}\n"))
        return store.commit_workspace(workspace, snapshot.revision, [change]).status == "committed"

    saves, commits = race(path, style, commit_line, pause=0.02)  # a workspace commit takes longer
    assert saves > 50 and commits > 20, (saves, commits)
    assert lost_hand_lines(kept_text(path), saves) == []


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
            params = {"expectedRevision": current["revision"], "content": f"{current['content']}agent-{n}\n"}
            return (await client.call("memory/replaceGlobal", params))["status"] == "committed"

        return loop.run_until_complete(once())

    try:
        saves, commits = race(home.global_file, style, commit_line)
    finally:
        loop.run_until_complete(client.close())
        loop.close()
    assert saves > 100 and commits > 20, (saves, commits)
    assert lost_hand_lines(kept_text(home.global_file), saves) == []
