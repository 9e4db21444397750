"""A session root whose name is not UTF-8 is never read, and where that leaves sessions out,
someone is told (decision 0494): a shell whose harness home is such a folder is warned by a
daemon that does not read it; the daemon neither watches such a root nor calls it missing; and
its shown name (the bad bytes as `\\xNN`) never stands for a folder. Each test runs the real
`remem` process, through a real daemon or without one."""

from __future__ import annotations

import json
import os
from pathlib import Path

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.sessions.roots import NAME_REASON
from remem.daemon.sessions.writer import SessionWriter
from tests.misnamed import misnamed_folder, remem_run
from tests.sessions.factory import SessionSpec, build_session

MISNAMED = os.fsdecode(b"h\xff")
SHOWN = "h\\xff"  # how remem shows that name, and a name of its own


def _env(tmp_path: Path, **variables: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != NO_DAEMON_ENV}
    env.update({"REMEM_HOME": str(tmp_path / "remem"), "HOME": str(tmp_path / "home")})
    for name in ("DSH_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        env[name] = str(tmp_path / f"no-{name.lower()}")
    return {**env, **{k: str(v) for k, v in variables.items()}}


def _stopped(env: dict[str, str]) -> None:
    stopped = remem_run(env, "daemon", "stop")
    assert stopped.returncode == 0, stopped.stderr


def test_a_shell_whose_dsh_home_is_not_utf8_is_told_the_daemon_does_not_read_it(tmp_path: Path) -> None:
    misnamed = misnamed_folder(tmp_path / MISNAMED / "dsh")
    (misnamed / "sessions").mkdir()
    daemons = _env(tmp_path, DSH_HOME=tmp_path / "dsh")
    (tmp_path / "dsh" / "sessions").mkdir(parents=True)
    started = remem_run(daemons, "daemon", "start")
    assert started.returncode == 0, started.stderr
    try:
        listed = remem_run({**daemons, "DSH_HOME": str(misnamed)}, "sessions", "list")
    finally:
        _stopped(daemons)
    assert listed.returncode == 0, listed.stderr
    shown = f"{tmp_path}/{SHOWN}/dsh/sessions"
    assert (
        f"DSH sessions in {tmp_path}/dsh/sessions, not in {shown}, which this shell's DSH_HOME names, "
        "a folder whose name is not UTF-8, which no listing can read: rename it;"
    ) in listed.stderr


def test_a_configured_root_under_a_home_not_utf8_is_neither_watched_nor_missing(tmp_path: Path) -> None:
    home = misnamed_folder(tmp_path / MISNAMED)
    (home / "sess").mkdir()
    (tmp_path / "remem").mkdir()
    (tmp_path / "remem" / "settings.yml").write_text("sessions:\n  roots: [~/sess]\n")
    env = _env(tmp_path, HOME=home)
    try:
        listed = remem_run(env, "sessions", "list", "--json")
        while "not watching yet" in (status := remem_run(env, "daemon", "status")).stdout:
            pass  # the watcher starts in its thread
    finally:
        _stopped(env)
    shown = f"{tmp_path}/{SHOWN}/sess"
    assert json.loads(listed.stdout)["errors"] == [
        {"path": shown, "message": NAME_REASON, "kind": "sessions"}
    ]
    assert status.returncode == 0, status.stderr
    assert shown not in status.stdout, status.stdout
    assert "missing" not in status.stdout, status.stdout


def test_a_folder_named_as_a_name_not_utf8_is_shown_is_not_read_for_it(tmp_path: Path) -> None:
    """HOME names a folder that is not there, by a name that is not UTF-8: its DSH folder is no
    root, not the folder whose own name is that name as shown, which holds a session."""
    sessions = tmp_path / SHOWN / ".dsh" / "sessions"
    draft = build_session(SessionSpec(seed=3, turns=2, cwd="/home/dev/demo"))
    writer = SessionWriter(sessions, draft.header)
    writer.append(draft.batches[0])
    writer.close()
    env = {**_env(tmp_path, HOME=tmp_path / MISNAMED), NO_DAEMON_ENV: "1"}
    del env["DSH_HOME"]
    listed = remem_run(env, "sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == {"sessions": [], "errors": []}
