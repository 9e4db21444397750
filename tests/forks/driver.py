"""A separate process that forks, for crash-point and concurrency tests.

python -m tests.forks.driver HOME ROOT SOURCE OPERATION_ID
"""

from __future__ import annotations

import sys
from pathlib import Path

from remem.daemon.forks.service import ForkService
from remem.daemon.home import Home
from remem.daemon.protocol.forks import ForkRequest
from remem.daemon.sessions.catalog import SessionCatalog

if __name__ == "__main__":
    home, root, source, operation = sys.argv[1:]
    catalog = SessionCatalog(Home(Path(home)), [Path(root)], idle_seconds=120)
    result = ForkService(catalog).fork(ForkRequest(source=source, operationId=operation))
    print(result.model_dump_json())
