"""A fork the file system refuses to write (a full disk) is refused as UNWRITABLE, leaves nothing
half-written, and the retry with the same operation id makes the child once there is room.

The refusal is real: the forking process runs under a file-size limit (`RLIMIT_FSIZE`) below the
child's size, so its writes fail with EFBIG as they would with ENOSPC.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.fsutil import is_temp_name
from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.paths import Encoding
from tests.sessions.factory import SessionSpec, build_session, write_session

from ..sessions.claude_lines import SID, jsonl, prompt, say
from ..sessions.codex_lines import meta, rollout, turn

REPO = Path(__file__).resolve().parents[2]
CWD = "/home/dev/projects/demo"
LIMIT = 256 * 1024  # above a journal entry and a small index, below every child here
LARGE = "x" * (4 * LIMIT)


def dsh_parent(tmp_path: Path, home: Home) -> list[str]:
    root = tmp_path / "root"
    write_session(
        root, build_session(SessionSpec(seed=7, target_bytes=4 * LIMIT, cwd=CWD)), encoding=Encoding.RAW
    )
    source = SessionCatalog(home, [root], idle_seconds=120).listing().sessions[0].id  # indexed first
    return ["tests.forks.driver", str(home.root), str(root), source]


def claude_parent(tmp_path: Path, home: Home) -> list[str]:
    path = tmp_path / "claude" / "projects" / "-home-u-proj" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        jsonl(
            prompt("u1", None, LARGE),
            say("a1", "u1", "an answer"),
            prompt("u2", "a1", "more"),
            say("a2", "u2", "ok"),
        )
    )
    return ["tests.forks.harness_driver", str(home.root), "claude-code", str(path)]


def codex_parent(tmp_path: Path, home: Home) -> list[str]:
    path = tmp_path / "codex" / "sessions" / "2026" / "05" / "01" / "rollout-2026-05-01T00-00-00-x.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        rollout(meta(model_provider="openai"), *turn("t1", LARGE, "an answer"), *turn("t2", "more", "ok"))
    )
    return ["tests.forks.harness_driver", str(home.root), "codex", str(path)]


PARENTS = {"dsh": dsh_parent, "claude-code": claude_parent, "codex": codex_parent}


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))  # Python ignores SIGXFSZ: EFBIG


def run(driver: list[str], *, full: bool) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *driver, "op"],
        cwd=REPO,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        preexec_fn=limited if full else None,
        capture_output=True,
        text=True,
        timeout=60,
    )


def files(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in folder.rglob("*") if p.is_file() and "home" not in p.parts}


@pytest.mark.parametrize("harness", sorted(PARENTS))
def test_a_full_disk_refuses_the_fork_cleanly_and_the_retry_makes_it(
    home: Home, tmp_path: Path, harness: str
) -> None:
    driver = PARENTS[harness](tmp_path, home)
    before = files(tmp_path)
    refused = run(driver, full=True)
    assert refused.returncode == 1, refused.stderr
    error = json.loads(refused.stdout)
    assert error["code"] == "UNWRITABLE", error
    assert "File too large" in error["message"] and "retry with the same operation id" in error["message"]
    # The file written through its folder's descriptor is named by its whole path, folder included.
    assert f"({tmp_path}{os.sep}" in error["message"], error["message"]
    assert files(tmp_path) == before, "no child, no temp, the parent untouched"
    made = run(driver, full=False)
    assert made.returncode == 0, made.stderr
    result = json.loads(made.stdout)
    assert result["created"] is True
    assert [p for p in tmp_path.rglob("*") if is_temp_name(p.name)] == []
    assert {k: v for k, v in files(tmp_path).items() if k in before} == before
    if harness != "dsh":  # a DSH result names no path; its child is found by the catalog
        assert Path(result["path"]).stat().st_size > 4 * LIMIT
