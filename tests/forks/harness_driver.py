"""A separate process that forks a Claude Code or Codex session, for crash-point tests.

python -m tests.forks.harness_driver HOME HARNESS PARENT_FILE OPERATION_ID

Prints the result as JSON, or a refusal as `{"code", "message"}` with exit code 1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home
from remem.daemon.sessions.errors import OperationError

if __name__ == "__main__":
    home, harness, parent, operation = sys.argv[1:]
    request = HarnessForkRequest(harness=harness, path=parent, operationId=operation, afterTurn=2)
    try:
        print(HarnessForks(Home(Path(home))).fork(request).model_dump_json())
    except OperationError as exc:
        print(json.dumps({"code": exc.code, "message": exc.message}))
        sys.exit(1)
