"""A daemon whose /dev/null cannot be opened when it begins capping its log (no descriptor left
at that moment, none in a container) still starts (decision 0453): it opened /dev/null there
unconditionally, and the error left `_listen`, the daemon crashing at start (exit 4). A full log
that cannot be moved aside then keeps taking lines until a later line can open /dev/null, and
takes nothing more from there on."""

from __future__ import annotations

import os
import subprocess
import sys

from remem.daemon.home import Home
from remem.daemon.server.runtime import LOG_CAP_ENV, DaemonPaths

CAP = 1024

# The daemon's log capped as a spawned daemon's is, in a process of its own, with /dev/null
# pointing at a path that does not exist when capping begins and is reached, and a folder at
# `daemon.log.1`; /dev/null is back before the last lines.
_NO_DEVNULL = """
import logging, os, sys
from pathlib import Path
from remem.daemon.credentials import log_to_stderr
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths, cap_log

paths = DaemonPaths(Home(Path(sys.argv[1])))
paths.old_log.mkdir()
opened = paths.home.open_file(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
for fd in (1, 2):
    os.dup2(opened, fd)
os.close(opened)
log_to_stderr(logging.INFO, "%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("remem.daemon")
header = log.makeRecord(log.name, logging.INFO, "", 0, "listening on here (pid %d)", (os.getpid(),), None)
log.handle(header)
devnull, os.devnull = os.devnull, str(paths.home.root / "no-devnull")
cap_log(paths, header)
for n in range(20):
    log.info("line %d %s", n, "x" * 100)
os.devnull = devnull
log.info("the line that finds /dev/null")
log.info("a line after it")
print("printed after it")
"""


def test_a_daemon_that_cannot_open_dev_null_caps_its_log_and_quiets_it_once_it_can(home: Home) -> None:
    paths = DaemonPaths(home)
    environment = {**os.environ, LOG_CAP_ENV: str(CAP)}
    ran = subprocess.run(
        [sys.executable, "-c", _NO_DEVNULL, str(home.root)],
        capture_output=True, text=True, timeout=60, env=environment,
    )  # fmt: skip
    logged = paths.log.read_text()
    assert ran.returncode == 0, logged
    assert f" WARNING {paths.log} passed {CAP} bytes and cannot be moved aside (" in logged, logged
    assert " INFO line 19 " in logged, "kept as they were while /dev/null could not be opened"
    assert logged.endswith(" INFO the line that finds /dev/null\n"), logged
    assert "Logging error" not in logged and "Traceback" not in logged, logged
