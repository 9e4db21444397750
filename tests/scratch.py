"""Folders made when a test module is imported (a language server's home must exist before its
client is configured), where pytest's `tmp_path` cannot reach: removed when the process exits,
so a run of the suite leaves nothing behind in the system's temp folder."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path


def process_folder(prefix: str) -> Path:
    """A fresh folder in the temp folder, removed with all it holds when this process exits."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
