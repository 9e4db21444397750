"""A separate process that forks, for crash-point and concurrency tests.

python -m tests.forks.driver HOME ROOT SOURCE OPERATION_ID

Prints the result as JSON, or a refusal as `{"code", "message"}` with exit code 1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from remem.daemon.forks.service import ForkService
from remem.daemon.home import Home
from remem.daemon.protocol.forks import ForkRequest
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.errors import OperationError

if __name__ == "__main__":
    home, root, source, operation = sys.argv[1:]
    catalog = SessionCatalog(Home(Path(home)), [Path(root)], idle_seconds=120)
    try:
        result = ForkService(catalog).fork(ForkRequest(source=source, operationId=operation))
    except OperationError as exc:
        print(json.dumps({"code": exc.code, "message": exc.message}))
        sys.exit(1)
    print(result.model_dump_json())
