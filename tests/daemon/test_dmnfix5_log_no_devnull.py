"""A daemon whose /dev/null cannot be opened when it begins capping its log (no descriptor left
at that moment, none in a container) still starts (decision 0453): it opened /dev/null there
unconditionally, and the error left `_listen`, the daemon crashing at start (exit 4). A full log
that cannot be moved aside then keeps taking lines until a later line can open /dev/null, and
takes nothing more from there on."""

from __future__ import annotations

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

from .capped_log import CAP, run_capped

# The daemon's log capped as a spawned daemon's is, in a process of its own, with /dev/null
# pointing at a path that does not exist when capping begins and is reached, and a folder at
# `daemon.log.1`; /dev/null is back before the last lines.
_NO_DEVNULL = """
paths.old_log.mkdir()
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
    ran = run_capped(home, _NO_DEVNULL)
    logged = paths.log.read_text()
    assert ran.returncode == 0, logged
    assert f" WARNING {paths.log} passed {CAP} bytes and cannot be moved aside (" in logged, logged
    assert " INFO line 19 " in logged, "kept as they were while /dev/null could not be opened"
    assert logged.endswith(" INFO the line that finds /dev/null\n"), logged
    assert "Logging error" not in logged and "Traceback" not in logged, logged
