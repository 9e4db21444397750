"""kill -9 in a loop, at random moments and at the fault points, over CLI commits and forks.

Each round runs one `remem` command without the daemon and kills it: by SIGKILL after a random
delay, or with `REMEM_FAULTPOINT` set to the next point of its protocol in turn. Whatever the
command acknowledged (exit 0) must be there afterwards (0 lost updates, 0 lost forks), memory
must read valid, and the parent session must be byte-for-byte what it was. Each loop runs for
`REMEM_KILL_SECONDS` (default 4), and at least once through every point with as many random
moments. The crash tests of each protocol (tests/memory, tests/forks) prove recovery at each
point one by one; this mixes them with arbitrary moments, over the CLI.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remem.daemon.faults import EXIT_CODE, POINTS
from remem.daemon.forks.child import child_id
from remem.daemon.forks.service import ForkService
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.forks import ForkRequest
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.reader import read_session
from tests.sessions.factory import SessionSpec, build_session, write_session

pytestmark = pytest.mark.slow

SECONDS = float(os.environ.get("REMEM_KILL_SECONDS", "4"))
COMMIT_POINTS = sorted(p for p in POINTS if p.startswith("memory.workspace.") and "rollback" not in p)
FORK_POINTS = sorted(p for p in POINTS if p.startswith("fork."))


class _Killer:
    """Runs `remem` without the daemon, killing it at a fault point or at a random moment: up to
    twice as long as the slowest run took to reach its point (near its end), so some finish."""

    def __init__(self, home: Home, seed: int) -> None:
        self.home, self.rng, self.reach = home, random.Random(seed), 1.0

    def run(self, args: list[str], point: str | None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "REMEM_NO_DAEMON": "1", "REMEM_FAULTPOINT": point or ""}
        command = [sys.executable, "-m", "remem.daemon", "--home", str(self.home.root), *args]
        started = time.monotonic()
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        if point is None:
            time.sleep(self.rng.uniform(0.2, 2.0) * self.reach)
            process.send_signal(signal.SIGKILL)
        out, err = process.communicate(timeout=60)
        if point is not None:
            self.reach = max(self.reach, time.monotonic() - started)
        return subprocess.CompletedProcess(command, process.returncode, out, err)


def _killed(done: subprocess.CompletedProcess[str]) -> bool:
    assert done.returncode in (0, EXIT_CODE, -signal.SIGKILL), done.stderr
    return done.returncode != 0


def _rounds(points: list[str]) -> itertools.cycle[str | None]:
    """Every point in turn, each followed by a random moment (timed by the point's run)."""
    return itertools.cycle([x for p in points for x in (p, None)])


def test_killed_commits_lose_no_acknowledged_update(home: Home, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    workspace, store, killer = WorkspaceId.from_cwd(project), MemoryStore(home), _Killer(home, 20)
    acknowledged: set[str] = set()
    kills = 0
    deadline = time.monotonic() + SECONDS
    for n, point in enumerate(_rounds(COMMIT_POINTS)):
        if time.monotonic() > deadline and n >= 2 * len(COMMIT_POINTS):
            break
        revision = store.read_workspace(workspace).revision  # recovers what a kill left first
        record = {"name": f"r-{n}", "description": f"Round {n}", "type": "project"}
        change = {"action": "put", "record": {**record, "content": f"Written in round {n}.\n"}}
        changes = tmp_path / "changes.json"
        changes.write_text(json.dumps([change]))
        args = [
            "memory",
            "apply",
            "--cwd",
            str(project),
            "--expected-revision",
            revision,
            "--changes",
            str(changes),
        ]
        done = killer.run([*args, "--json"], point)
        if _killed(done):
            kills += 1
        else:
            assert json.loads(done.stdout)["status"] == "committed", done.stdout
            acknowledged.add(f"r-{n}")
    records = {r.name: r.content for r in store.read_workspace(workspace).records}
    assert acknowledged <= set(records), "an acknowledged commit was lost"
    assert all(records[name] == f"Written in round {name[2:]}.\n" for name in records)
    assert kills >= len(COMMIT_POINTS) and acknowledged, "points and moments killed commits; others ran"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_killed_forks_lose_no_acknowledged_fork_and_leave_the_parent_alone(
    home: Home, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    home.ensure_layout()
    home.settings_file.write_text(f"sessions:\n  roots: [{json.dumps(str(root))}]\n")
    parent = write_session(root, build_session(SessionSpec(seed=4, turns=3, cwd=str(tmp_path / "project"))))
    os.utime(parent, (1_600_000_000, 1_600_000_000))  # long finished, so forkable
    parent_id, before, killer = read_session(parent).header.id, _digest(parent), _Killer(home, 21)
    acknowledged: dict[str, str] = {}
    tried: list[str] = []
    deadline = time.monotonic() + SECONDS
    for n, point in enumerate(_rounds(FORK_POINTS)):
        if time.monotonic() > deadline and n >= 2 * len(FORK_POINTS):
            break
        op = f"op-{n}"
        tried.append(op)
        done = killer.run(["sessions", "fork", parent_id, "--op-id", op, "--json"], point)
        if not _killed(done):
            acknowledged[op] = json.loads(done.stdout)["child"]
        assert _digest(parent) == before, "the parent is never changed"
    forks = ForkService(SessionCatalog(home, [root], idle_seconds=120))
    for op in tried:  # each client retries what it was not told: the same child, exactly once
        result = forks.fork(ForkRequest(source=parent_id, operationId=op))
        assert result.child == child_id(op) and acknowledged.get(op, result.child) == result.child
        assert op not in acknowledged or result.created is False, "an acknowledged fork was lost"
    assert acknowledged and len(acknowledged) < len(tried), "some forks were killed, some ran to the end"
    children = [p for p in root.rglob("session.jsonl*") if p != parent]
    assert sorted(read_session(p).header.id for p in children) == sorted(child_id(op) for op in tried)
    assert _digest(parent) == before
