"""A full log that cannot be moved aside for want of descriptors (decision 0453): the warning
saying so is its last line, and the log takes nothing more, a crash's traceback neither. The
daemon opened /dev/null only then, which found no descriptor left either: descriptors 1 and 2
kept writing to the full log, which grew without bound."""

from __future__ import annotations

import os
import subprocess
import sys

from remem.daemon.home import Home
from remem.daemon.server.runtime import LOG_CAP_ENV, DaemonPaths

CAP = 1024

# The daemon's log capped as a spawned daemon's is, in a process of its own that has no
# descriptor left (its limit lowered to those it holds) once it listens, with a folder at
# `daemon.log.1`; it logs lines past the cap, then crashes.
_NO_DESCRIPTOR_LEFT = """
import logging, os, resource, sys
from pathlib import Path
from remem.daemon.credentials import log_to_stderr
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths, cap_log, log_crash

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
cap_log(paths, header)
free = os.dup(0)
os.close(free)
resource.setrlimit(resource.RLIMIT_NOFILE, (free, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
for n in range(20):
    log.info("line %d %s", n, "x" * 100)
log_crash(RuntimeError("a bug"))
print("a traceback printed")
"""


def test_a_full_log_with_no_descriptor_left_takes_nothing_after_its_warning(home: Home) -> None:
    paths = DaemonPaths(home)
    environment = {**os.environ, LOG_CAP_ENV: str(CAP)}
    ran = subprocess.run(
        [sys.executable, "-c", _NO_DESCRIPTOR_LEFT, str(home.root)],
        capture_output=True, text=True, timeout=60, env=environment,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    logged = paths.log.read_text()
    said = logged.splitlines()[-1]
    assert f" WARNING {paths.log} passed {CAP} bytes and cannot be moved aside ([Errno 24] " in said, logged
    assert len(logged) <= CAP + 2 * len(said), logged
    assert "Logging error" not in logged and " INFO line 19 " not in logged, logged
    assert "a bug" not in logged and "a traceback printed" not in logged, logged
