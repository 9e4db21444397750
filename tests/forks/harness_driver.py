"""A separate process that forks a Claude Code or Codex session, for crash-point tests.

python -m tests.forks.harness_driver HOME HARNESS PARENT_FILE OPERATION_ID
"""

from __future__ import annotations

import sys
from pathlib import Path

from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home

if __name__ == "__main__":
    home, harness, parent, operation = sys.argv[1:]
    request = HarnessForkRequest(harness=harness, path=parent, operationId=operation, afterTurn=2)
    print(HarnessForks(Home(Path(home))).fork(request).model_dump_json())
