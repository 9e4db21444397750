"""A read refused SCOPE_BUSY (`remem memory show`, `log`, `context` through the daemon, an agent's
`agents/context`, `index` and `record`, while
another process keeps a lock of the scope) says the memory cannot be read now, where it said
"nothing was written", as a refused write does: odd for a command that writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon import locks
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.protocol.rpc import SCOPE_BUSY, RpcError

from .helpers import calls, remem

pytestmark = pytest.mark.slow
NOT_READ = "this memory cannot be read now; end that process, then try again"


@pytest.mark.parametrize("command", [("show",), ("log", "--global")])
def test_a_read_refused_busy_says_it_could_not_read(
    home: Home, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    lock = home.locks / "global.lock"
    home.global_file.write_text("Answer briefly.\n")  # so Global's read takes its lock
    held = locks.try_file_lock(lock)
    assert held is not None
    try:
        shown = remem(home, "memory", *command)
    finally:
        held.release()
    assert shown.returncode == 1, (shown.returncode, shown.stdout, shown.stderr)
    assert shown.stderr.startswith(f"remem: another remem process writing this memory has held {lock}")
    assert NOT_READ in shown.stderr and "nothing was written" not in shown.stderr, shown.stderr


@pytest.mark.parametrize("method", ["agents/context", "agents/index", "agents/record"])
def test_an_agents_read_refused_busy_says_it_could_not_read(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    project = tmp_path / "project"
    project.mkdir()
    key = WorkspaceId.from_cwd(str(project)).key
    (home.workspaces / key).mkdir(parents=True)
    assert remem(home, "daemon", "start").returncode == 0
    params: dict[str, str] = {"cwd": str(project)} | ({"name": "style"} if method == "agents/record" else {})
    lock = home.locks / f"ws-{key}.lock"
    held = locks.try_file_lock(lock)
    assert held is not None
    try:
        [refused] = calls(home, [(method, params)])
    finally:
        held.release()
        remem(home, "daemon", "stop")
    assert isinstance(refused, RpcError) and refused.code == SCOPE_BUSY, refused
    assert str(lock) in refused.message and NOT_READ in refused.message, refused.message
    assert "nothing was written" not in refused.message, refused.message
