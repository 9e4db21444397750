"""Folders made when a test module is imported (a language server's home must exist before its
client is configured), where pytest's `tmp_path` cannot reach: removed when the process exits,
so a run of the suite leaves nothing behind in the system's temp folder."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path


def process_folder(prefix: str) -> Path:
    """A fresh folder in the temp folder, removed with all it holds when this process exits."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def hooked_pythonpath(hook: str, prefix: str) -> str:
    """A PYTHONPATH whose first folder holds `hook` as `sitecustomize.py`, so a child Python
    process (a daemon, a server, a run) runs it at its start and nothing else does."""
    hooks = process_folder(prefix)
    (hooks / "sitecustomize.py").write_text(hook)
    return os.pathsep.join([str(hooks), *filter(None, [os.environ.get("PYTHONPATH")])])
