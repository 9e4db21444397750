"""A revert through the daemon says what it changed from the stat of its entry alone: a change
whose patch is past the daemon's answer cap made the committed revert exit 1 with only an error,
before it said `committed:` (decision 0443)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.record import BODY_MAX_BYTES
from remem.daemon.memory.store import MemoryStore
from tests.memory.factory import put

pytestmark = pytest.mark.slow

RECORDS = 160  # of a nearly full body each: their removal's patch is past 1 MiB


def remem(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_revert_whose_patch_is_past_the_answer_cap_still_says_what_it_changed(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, as_json: bool
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\n  max_answer_bytes: {1 << 20}\n")
    (tmp_path / "project").mkdir()
    workspace = WorkspaceId.from_cwd(str(tmp_path / "project"))
    body = "A line of a long record.\n" * (BODY_MAX_BYTES // 26)
    store = MemoryStore(home)
    made = store.commit_workspace(workspace, store.read_workspace(workspace).revision,
                                  [put(f"r{n:03}", body) for n in range(RECORDS)])  # fmt: skip
    assert made.history is not None

    done = remem(home, "memory", "revert", "--before", made.history, *(["--json"] if as_json else []))

    assert done.returncode == 0, (done.stdout, done.stderr)
    assert store.read_workspace(workspace).records == []
    if as_json:
        said = json.loads(done.stdout)
        assert said["status"] == "committed" and len(said["change"]["stat"]["removed"]) == RECORDS
    else:
        lines = done.stdout.splitlines()
        assert lines[0].startswith("committed: ") and lines[1].startswith("this revert: removed r000, "), (
            done.stdout
        )
