"""Running the `remem` command line with a Ctrl-C at a chosen moment: when it first imports a
given module (a moment no timing can hit reliably)."""

from __future__ import annotations

import sys

# Run as `python -c SCRIPT MODULE ARGS...`: the command line `remem ARGS...`, whose process is sent
# SIGINT as MODULE is first imported.
INTERRUPTED_AT_IMPORT = """
import os, signal, sys

class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == MODULE:
            os.kill(os.getpid(), signal.SIGINT)
        return None  # and the import goes on

MODULE = sys.argv.pop(1)
sys.meta_path.insert(0, Interrupt())
from remem.daemon.cli import main
main()
"""


def interrupted_at_import(module: str, *args: str) -> list[str]:
    """The command running `remem ARGS...`, interrupted as it first imports `module`."""
    return [sys.executable, "-c", INTERRUPTED_AT_IMPORT, module, *args]
