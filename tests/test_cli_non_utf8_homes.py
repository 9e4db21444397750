"""A harness folder whose name is not UTF-8 (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`, `DSH_HOME`, or a
`~` in `sessions.roots` of a HOME whose name is not) is one root the listing says it cannot read,
by its name with the bad bytes as `\\xNN`; every command else works. Its raw name failed every
daemon command as a bug (exit 4, `daemon stop` included: hello could not be sent), and
`--no-daemon sessions list` where the index marked the root listed. Each test runs the real
`remem` process, through a real daemon or without one."""

from __future__ import annotations

import json
import os
from pathlib import Path

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.sessions.roots import NAME_REASON
from tests.misnamed import misnamed_folder, remem_run


def _shown(path: Path) -> str:
    return os.fsencode(path).decode(errors="backslashreplace")


def _env(tmp_path: Path, daemon: bool, **variables: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != NO_DAEMON_ENV}
    env.update({"REMEM_HOME": str(tmp_path / "remem"), "HOME": str(tmp_path / "home")})
    env.update({"DSH_HOME": str(tmp_path / "no-dsh"), **{k: str(v) for k, v in variables.items()}})
    return env if daemon else {**env, NO_DAEMON_ENV: "1"}


def test_a_codex_home_not_utf8_is_a_root_error_and_the_daemon_serves(tmp_path: Path) -> None:
    codex = misnamed_folder(tmp_path / os.fsdecode(b"codex\xff")) / "sessions"
    codex.mkdir()
    claude = tmp_path / "nowhere" / os.fsdecode(b"claude\xfe")  # no folder there: never said
    env = _env(tmp_path, True, CODEX_HOME=codex.parent, CLAUDE_CONFIG_DIR=claude)
    (tmp_path / "ws").mkdir()
    try:
        shown = remem_run(env, "memory", "show", "--cwd", str(tmp_path / "ws"), "--json")
        assert shown.returncode == 0, shown.stderr
        listed = remem_run(env, "sessions", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert json.loads(listed.stdout) == {
            "sessions": [],
            "errors": [{"path": _shown(codex), "message": NAME_REASON, "kind": "sessions"}],
        }
        text = remem_run(env, "sessions", "list")
        assert f"error: {_shown(codex)}: {NAME_REASON}\n" in text.stderr
        # Its error is above: the folder is not said to be missing where it is not read.
        assert f"  {_shown(codex)} (Codex's folder)\n" in text.stderr
        assert f"  {_shown(claude)}/projects (Claude Code's folder, not found)\n" in text.stderr
        status = remem_run(env, "daemon", "status")
        assert status.returncode == 0, status.stderr
    finally:
        stopped = remem_run(env, "daemon", "stop")
    assert (stopped.returncode, stopped.stdout) == (0, "remem daemon stopped\n"), stopped.stderr


def test_a_root_under_a_home_not_utf8_is_a_root_error_without_the_daemon(tmp_path: Path) -> None:
    home = misnamed_folder(tmp_path / os.fsdecode(b"h\xff"))
    dsh = home / "dsh"
    dsh.mkdir()
    remem = tmp_path / "remem"
    remem.mkdir()
    (remem / "settings.yml").write_text('sessions:\n  roots: ["~/dsh"]\n')
    env = {**_env(tmp_path, False), "HOME": str(home)}
    listed = remem_run(env, "sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == {
        "sessions": [],
        "errors": [{"path": _shown(dsh), "message": NAME_REASON, "kind": "sessions"}],
    }
    again = remem_run(env, "sessions", "list", "--json")  # the index is used again: nothing was kept of it
    assert (again.returncode, again.stdout) == (0, listed.stdout), again.stderr
