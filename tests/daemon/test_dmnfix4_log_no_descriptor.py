"""A full log that cannot be moved aside for want of descriptors (decision 0453): the warning
saying so is its last line, and the log takes nothing more but a crash's one line, no traceback
(decision 0484). The daemon opened /dev/null only then, which found no descriptor left either:
descriptors 1 and 2 kept writing to the full log, which grew without bound."""

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


def test_a_full_log_with_no_descriptor_left_takes_only_its_crash_after_its_warning(home: Home) -> None:
    """The crash's line is written through the descriptor held for /dev/null, given up for it:
    the crash went unsaid, the log ending with the warning as if the daemon still ran."""
    paths = DaemonPaths(home)
    ran = run_capped(home, _NO_DESCRIPTOR_LEFT)
    assert ran.returncode == 0, ran.stderr
    logged = paths.log.read_text()
    *_, warned, crashed = logged.splitlines()
    assert f" WARNING {paths.log} passed {CAP} bytes and cannot be moved aside ([Errno 24] " in warned, logged
    assert crashed.endswith(
        " ERROR the daemon stopped on an unexpected error, RuntimeError: a bug (its traceback is not "
        "logged: the log is full)"
    ), logged
    assert len(logged) <= CAP + 2 * len(warned) + len(crashed), logged
    assert "Logging error" not in logged and " INFO line 19 " not in logged, logged
    assert "Traceback" not in logged and "a traceback printed" not in logged, logged
