"""A separate process that saves a file by hand, as an editor does, until told to stop.

python -m tests.reliability.editor PATH STYLE PAUSE_SECONDS STOP_FILE

Each save re-reads the file and appends `hand-N`; STYLE `rename` writes a temp file and renames
it over PATH (vim's default, many others), `in-place` truncates and rewrites PATH (VS Code).
Pauses PAUSE_SECONDS between saves; prints the number of saves when STOP_FILE appears.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def save(path: Path, data: bytes, style: str) -> None:
    if style == "rename":
        temp = path.with_name(f"{path.name}.editor-save")
        temp.write_bytes(data)
        os.replace(temp, path)
    else:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


def main(path: Path, style: str, pause: float, stop: Path) -> None:
    saves = 0
    while not stop.exists():
        saves += 1
        save(path, path.read_bytes() + f"hand-{saves}\n".encode(), style)
        time.sleep(pause)
    print(saves)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]), Path(sys.argv[4]))
