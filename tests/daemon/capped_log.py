"""The daemon's log capped as a spawned daemon's is, in a process of its own: the tests of what
capping does when the system refuses it a step (decision 0453) go on from there with their own
lines, each in its own process as what they take away (descriptors, /dev/null) is process-wide."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import SPAWNED_ENV
from remem.daemon.home import Home
from remem.daemon.server.log_cap import LOG_CAP_ENV

CAP = 1024

# `paths`, `log` and `header` (the line a daemon's log begins with) for the script that follows;
# the log is the process's descriptors 1 and 2, as a spawned daemon's is, and not capped yet.
_LOGGING_AS_A_DAEMON = """
import logging, os, resource, sys
from pathlib import Path
from remem.daemon.credentials import log_to_stderr
from remem.daemon.home import Home
from remem.daemon.server import log_cap
from remem.daemon.server.log_cap import cap_log, log_crash
from remem.daemon.server.runtime import DaemonPaths

paths = DaemonPaths(Home(Path(sys.argv[1])))
opened = paths.home.open_file(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
for fd in (1, 2):
    os.dup2(opened, fd)
os.close(opened)
log_to_stderr(logging.INFO, "%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("remem.daemon")
header = log.makeRecord(log.name, logging.INFO, "", 0, "listening on here (pid %d)", (os.getpid(),), None)
log.handle(header)
"""


def run_capped(home: Home, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `script` in a process whose log is `home`'s daemon log, capped at `CAP` once it
    calls `cap_log(paths, header)`; `args` follow the home in `sys.argv`."""
    return subprocess.run(
        [sys.executable, "-c", _LOGGING_AS_A_DAEMON + script, str(home.root), *args],
        capture_output=True, text=True, timeout=60, env={**os.environ, LOG_CAP_ENV: str(CAP)},
    )  # fmt: skip


def remem_logging_capped(
    home: Home, *args: str, preexec: Callable[[], None] | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """The CLI through the daemon, the log's cap `CAP`."""
    environment = {k: v for k, v in os.environ.items() if k not in (NO_DAEMON_ENV, SPAWNED_ENV)}
    environment.update({LOG_CAP_ENV: str(CAP), **env})
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=60, env=environment, preexec_fn=preexec
    )
