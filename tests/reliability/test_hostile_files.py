"""Each hostile file the attack fed the daemon is refused alone, naming its cap; all else serves.

A running daemon lists a root holding a good session beside a zstd bomb, a 100 MB line and a
million tiny events, and reads workspaces holding a 100 MB record or a record with 100 000
front-matter keys; its state holds a garbage `session-meta.json` and a workspace a garbage
journal (the corrupt state tests/memory and tests/forks check one by one). Every one is a
per-file error that names the file and the cap or the fix; the good session is listed, and the
daemon answers afterwards. How much memory the daemon used through
each is measured by the `daemon.hostile-rss` benchmark, not here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.journal import JOURNAL_NAME
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.rpc import RpcError
from remem.daemon.sessions.paths import Encoding
from tests.daemon.helpers import calls, remem
from tests.reliability.hostile import CWD, INPUTS, ROOTS
from tests.sessions.factory import SessionSpec, build_session, write_session

pytestmark = pytest.mark.slow


def _project(tmp_path: Path, name: str) -> Path:
    project = tmp_path / "projects" / name.replace(" ", "-")
    project.mkdir(parents=True, exist_ok=True)
    return project


@pytest.fixture
def hostile_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Home, Path, dict[str, Path]]:
    """A home and a root holding every hostile input (each memory file in its own workspace)."""
    home, root = Home(tmp_path / "home"), tmp_path / "root"
    home.ensure_layout()
    roots = ", ".join(json.dumps(str(root / r)) for r in ROOTS)
    home.settings_file.write_text(f"sessions:\n  roots: [{roots}]\ndaemon:\n  idle_minutes: 2\n")
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "no-dsh-home"))
    monkeypatch.delenv("REMEM_NO_DAEMON")
    written = {i.name: i.write(root, home, _project(tmp_path, i.name)) for i in INPUTS}
    (home.state / "session-meta.json").write_text("{garbage")
    journaled = MemoryStore(home).folder(WorkspaceId.from_cwd(_project(tmp_path, "journaled")))
    journaled.mkdir(parents=True)
    written["journal"] = journaled / JOURNAL_NAME
    written["journal"].write_text("{garbage")
    write_session(
        root / ROOTS[0], build_session(SessionSpec(seed=1, turns=2, cwd=CWD)), encoding=Encoding.RAW
    )
    return home, root, written


def test_the_daemon_refuses_each_hostile_file_alone_and_keeps_serving(
    hostile_home: tuple[Home, Path, dict[str, Path]], tmp_path: Path
) -> None:
    home, _, written = hostile_home
    try:
        [listing] = calls(home, [("sessions/list", {})])
        assert len(listing["sessions"]) == 1, "the good session is listed"
        errors = {e["path"]: e["message"] for e in listing["errors"]}
        for hostile in (i for i in INPUTS if not i.in_memory):
            assert hostile.refusal in errors[str(written[hostile.name])], hostile.name
        assert "cannot be read" in errors[str(home.state / "session-meta.json")]
        assert len(errors) == 4
        reads = [
            ("memory/readWorkspace", {"cwd": str(_project(tmp_path, i.name))}) for i in INPUTS if i.in_memory
        ]
        journaled = ("memory/readWorkspace", {"cwd": str(_project(tmp_path, "journaled"))})
        *answers, broken = calls(home, [*reads, ("daemon/status", {}), journaled])
        assert isinstance(broken, RpcError) and broken.data["files"][0]["path"] == str(written["journal"])
        assert broken.data["files"][0]["diagnostics"][0]["code"] == "remem/unreadable-journal"
        for hostile, answer in zip((i for i in INPUTS if i.in_memory), answers, strict=False):
            assert isinstance(answer, RpcError), hostile.name
            [file] = [f for f in answer.data["files"] if f["path"] == str(written[hostile.name])]
            assert any(hostile.refusal in d["message"] for d in file["diagnostics"]), file
        assert answers[-1]["pid"] > 0, "the daemon still answers"
    finally:
        remem(home, "daemon", "stop")


def test_the_validator_names_the_cap_of_each_hostile_memory_file(
    hostile_home: tuple[Home, Path, dict[str, Path]],
) -> None:
    home, _, written = hostile_home
    for hostile in (i for i in INPUTS if i.in_memory):
        done = remem(home, "memory", "validate", "--json", str(written[hostile.name]))
        assert done.returncode != 0
        [report] = json.loads(done.stdout)["files"]
        assert [d["code"] for d in report["diagnostics"]][0] in (
            "remem/file-too-large",
            "remem/front-matter-too-large",
        )
        assert hostile.refusal in report["diagnostics"][0]["message"]
