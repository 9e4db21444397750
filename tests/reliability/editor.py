"""A separate process that saves a file by hand, as an editor does, until told to stop.

python -m tests.reliability.editor PATH STYLE PAUSE_SECONDS STOP_FILE

Each save re-reads the file, appends `hand-N` and drops its own lines older than KEEP saves
(so the file stays small however long the race runs). STYLE `rename` writes a temp file and
renames it over PATH (vim's default, many others), `in-place` truncates and rewrites PATH
(VS Code). Before each save it checks that its previous line is still there, in PATH or in a
copy remem kept beside it; when STOP_FILE appears it prints `{"saves": N, "lost": [...]}`.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

KEEP = 20
_HAND = re.compile(r"hand-(\d+)\n")


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


def kept_text(path: Path, text: str) -> str:
    """`text` (read from `path`) and every copy kept beside it when two saves met one exchange."""
    return text + "".join(p.read_text() for p in path.parent.glob(f"{path.name}.unmerged-*"))


def main(path: Path, style: str, pause: float, stop: Path) -> None:
    saves = 0
    lost = []
    while not stop.exists():
        text = path.read_text()
        if saves and f"hand-{saves}\n" not in kept_text(path, text):
            lost.append(saves)
        saves += 1
        lines = [line for line in text.splitlines(keepends=True) if not _older(line, saves - KEEP)]
        save(path, "".join([*lines, f"hand-{saves}\n"]).encode(), style)
        time.sleep(pause)
    print(json.dumps({"saves": saves, "lost": lost}))


def _older(line: str, oldest: int) -> bool:
    match = _HAND.fullmatch(line)
    return match is not None and int(match[1]) < oldest


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]), Path(sys.argv[4]))
