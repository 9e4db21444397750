"""A read refused SCOPE_BUSY (`remem memory show`, `log`, `context` through the daemon, while
another process keeps a lock of the scope) says the memory cannot be read now, where it said
"nothing was written", as a refused write does: odd for a command that writes nothing."""

from __future__ import annotations

import pytest

from remem.daemon import locks
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home

from .helpers import remem

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
