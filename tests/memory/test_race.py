"""Several processes doing read-modify-CAS on one workspace and on Global lose no update."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.revision import global_revision, workspace_revision
from remem.daemon.memory.store import MemoryStore

REPO = Path(__file__).resolve().parents[2]
WORKERS = 8
COMMITS = 100


@pytest.mark.slow
def test_no_lost_update_between_processes(store: MemoryStore, workspace: WorkspaceId) -> None:
    command = [sys.executable, "-m", "tests.memory.driver", "race", str(store.home.root), workspace.cwd]
    procs = [
        subprocess.Popen(
            [*command, str(w), str(COMMITS)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WORKERS)
    ]
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    assert sum(r["conflicts"] for r in reports) > 0, "the workers never actually raced"

    snap = store.read_workspace(workspace)
    values = {r.name: int(r.content) for r in snap.records}
    assert values["counter"] == WORKERS * COMMITS
    assert all(values[f"worker-{w}"] == COMMITS for w in range(WORKERS))
    lines = store.read_global().content.splitlines()
    assert sorted(lines) == sorted(f"{w}-{n}" for w in range(WORKERS) for n in range(1, COMMITS + 1))
    for w in range(WORKERS):
        own = [int(line.split("-")[1]) for line in lines if line.startswith(f"{w}-")]
        assert own == sorted(own), "each worker's commits appear in its own order"

    folder = store.folder(workspace)
    on_disk = {p.name: p.read_bytes() for p in folder.glob("*.md") if p.name != "MEMORY.md"}
    assert workspace_revision(on_disk) == snap.revision
    assert global_revision(store.home.global_file.read_bytes()) == store.read_global().revision
