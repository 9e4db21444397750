"""A separate process that saves a file by hand, as an editor does, until told to stop.

python -m tests.reliability.editor PATH STYLE PAUSE_SECONDS STOP_FILE

Each save re-reads the file, appends `hand-N` and drops its own lines older than KEEP saves
(so the file stays small however long the race runs). STYLE `rename` writes a temp file and
renames it over PATH (vim's default, many others), `in-place` truncates and rewrites PATH
(VS Code). When STOP_FILE appears it prints `{"saves": N, "lost": [...]}`: the saves whose line
it never dropped itself and that is in neither PATH nor a copy remem kept beside it. A line is
judged once the race is over, not at each read, since a read can fall in the instant a commit
holds the name before undoing itself, and the line then comes back.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

KEEP = 20
STYLES = ["rename", "in-place"]
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
    unread: set[int] = set()  # saves whose line this editor has not taken out of the file itself
    while not stop.exists():
        text = path.read_text()
        saves += 1
        lines = []
        for line in text.splitlines(keepends=True):
            old = _older(line, saves - KEEP)
            if old is None:
                lines.append(line)
            else:
                unread.discard(old)
        save(path, "".join([*lines, f"hand-{saves}\n"]).encode(), style)
        unread.add(saves)
        time.sleep(pause)
    kept = kept_text(path, path.read_text())
    print(json.dumps({"saves": saves, "lost": sorted(n for n in unread if f"hand-{n}\n" not in kept)}))


def _older(line: str, oldest: int) -> int | None:
    """The save number of `line` when it is one of this editor's lines older than `oldest`."""
    match = _HAND.fullmatch(line)
    return int(match[1]) if match is not None and int(match[1]) < oldest else None


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]), Path(sys.argv[4]))
