"""A full log that cannot be moved aside for want of descriptors (decision 0453): the warning
saying so is its last line, and the log takes nothing more, a crash's traceback neither. The
daemon opened /dev/null only then, which found no descriptor left either: descriptors 1 and 2
kept writing to the full log, which grew without bound."""

from __future__ import annotations

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

from .capped_log import CAP, run_capped

# The daemon's log capped as a spawned daemon's is, in a process of its own that has no
# descriptor left (its limit lowered to those it holds) once it listens, with a folder at
# `daemon.log.1`; it logs lines past the cap, then crashes.
_NO_DESCRIPTOR_LEFT = """
paths.old_log.mkdir()
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
    ran = run_capped(home, _NO_DESCRIPTOR_LEFT)
    assert ran.returncode == 0, ran.stderr
    logged = paths.log.read_text()
    said = logged.splitlines()[-1]
    assert f" WARNING {paths.log} passed {CAP} bytes and cannot be moved aside ([Errno 24] " in said, logged
    assert len(logged) <= CAP + 2 * len(said), logged
    assert "Logging error" not in logged and " INFO line 19 " not in logged, logged
    assert "a bug" not in logged and "a traceback printed" not in logged, logged
