"""A link, a flat DSH log or a stray subagent sidecar whose name is not UTF-8, in any root, is one
listing error by its name with the bad bytes as `\\xNN` (decision 0495). These were refused before
their name was checked, by their raw name: the daemon could not send the listing (exit 4,
INTERNAL) and `--no-daemon --json` wrote bytes that are not UTF-8, so one stray link hid every
session. Each test runs the real `remem` process, through a real daemon and without one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.sessions.harness_sources import SIDECAR_REASON
from remem.daemon.sessions.roots import FLAT_REASON, LINK_REASON, NAME_REASON
from tests.sessions.claude_lines import CWD
from tests.sessions.harness_roots import SID, TID, build_roots, claude_project

BAD = os.fsdecode(b"\xff")


def _remem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", *args], capture_output=True, env=env, timeout=120
    )


def _link(path: Path, to: Path) -> str:
    """`path` made a link to `to`; its name as a listing shows it. Skipped where the file system
    refuses names that are not UTF-8."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.symlink_to(to)
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    return str(path).replace(BAD, "\\xff")


def _odd_names(tmp_path: Path) -> dict[str, str]:
    """Roots holding every refusal the review found made before the name check, and the error
    each must be: the shown path and its reason."""
    roots = build_roots(tmp_path)
    target = tmp_path / "elsewhere"
    target.mkdir()
    claude = claude_project(roots["claude-code"])
    (dsh_project,) = roots["dsh"].glob("*/")
    (rollout,) = roots["codex"].glob(f"*/*/*/*{TID}.jsonl")
    sidecar = claude / SID / "subagents" / f"agent-{BAD}.meta.json"
    sidecar.write_text("{}")
    return {
        _link(claude / f"{BAD}.jsonl", target): LINK_REASON,
        _link(roots["claude-code"] / f"-x{BAD}", target): LINK_REASON,
        _link(claude / BAD / "subagents", target): LINK_REASON,
        str(sidecar).replace(BAD, "\\xff"): SIDECAR_REASON.format(name="agent-\\xff.jsonl"),
        _link(roots["codex"] / "2026" / BAD, target): LINK_REASON,
        _link(roots["dsh"] / f"--{BAD}--", target): LINK_REASON,
        _link(dsh_project / BAD, target): LINK_REASON,
        _copy(dsh_project / f"{BAD}.jsonl", b""): FLAT_REASON,
        # Named like a session and a regular file: refused by its name (NAME_REASON) all along.
        _copy(claude / f"{BAD}r.jsonl", claude / f"{SID}.jsonl"): NAME_REASON,
        _copy(roots["claude-code"] / f"-y{BAD}" / f"{SID}.jsonl", claude / f"{SID}.jsonl"): NAME_REASON,
        _copy(claude / SID / "subagents" / f"agent-{BAD}r.jsonl", claude / f"{SID}.jsonl"): NAME_REASON,
        _copy(
            roots["codex"] / "2026" / f"{BAD}d" / f"rollout-2026-05-01T00-30-00-{TID}.jsonl", rollout
        ): NAME_REASON,
        _copy(dsh_project / f"{BAD}s" / "session.jsonl", b""): NAME_REASON,
    }


def _copy(path: Path, source: Path | bytes) -> str:
    """`path` made a regular file holding `source` (a file's bytes); its name as a listing shows it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(source if isinstance(source, bytes) else source.read_bytes())
    return str(path).replace(BAD, "\\xff")


def _env(tmp_path: Path, daemon: bool) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != NO_DAEMON_ENV}
    home = tmp_path / "remem"
    home.mkdir()
    roots = [f"{{path: '{tmp_path / p}', format: {f}}}" for p, f in
             [("claude/projects", "claude-code"), ("codex/sessions", "codex"), ("dsh", "dsh")]]  # fmt: skip
    (home / "settings.yml").write_text(f"sessions:\n  roots: [{', '.join(roots)}]\n")
    env.update(
        {"REMEM_HOME": str(home), "HOME": str(tmp_path / "home"), "DSH_HOME": str(tmp_path / "no-dsh")}
    )
    return env if daemon else {**env, NO_DAEMON_ENV: "1"}


def _listed(env: dict[str, str], *args: str) -> dict[str, object]:
    done = _remem(env, "sessions", *args, "--json")
    assert done.returncode == 0, done.stderr.decode(errors="backslashreplace")
    return json.loads(done.stdout.decode())  # strict UTF-8: a raw byte fails here


@pytest.mark.parametrize("daemon", [True, False])
def test_odd_names_refused_early_are_each_one_error_by_their_shown_name(tmp_path: Path, daemon: bool) -> None:
    expected = _odd_names(tmp_path)
    env = _env(tmp_path, daemon)
    try:
        listing = _listed(env, "list")
        assert {e["path"]: e["message"] for e in listing["errors"]} == expected  # type: ignore[union-attr, index]
        assert {SID, TID, "dsh-1"} <= {s["id"] for s in listing["sessions"]}  # type: ignore[union-attr, index]
        tree = _listed(env, "tree", "--cwd", CWD)
        assert SID in json.dumps(tree)
        # A rollout of the thread under a folder whose name is not UTF-8 is never indexed: its
        # lookup by id passes it by, where the index was asked for it (exit 4, INTERNAL).
        shown = _listed(env, "show", TID)
        assert shown["header"]["id"] == TID, shown  # type: ignore[index]
        text = _remem(env, "sessions", "list")
        assert text.returncode == 0 and "\\xff" in text.stderr.decode()
        assert b"\xff" not in text.stderr + text.stdout
    finally:
        if daemon:
            _remem(env, "daemon", "stop")
