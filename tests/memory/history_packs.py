"""The history's small packs, as tests damage and merge them: merges kept off (`NEVER`), a pack
file replaced as a power cut or a disk leaves it, and the next start as a process of its own
whose commits each merge the small packs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from remem.daemon.memory.store import MemoryStore

NEVER = 65537  # no four hex digits of a commit id make a multiple of it but 0000: no merge


def replaced(path: Path, data: bytes) -> None:
    """`path` holding `data` from the next start on (a new file: a process that mapped the old
    one reads on in it, as one whose disk changed under it would not)."""
    fresh = path.with_name("damaged")
    fresh.write_bytes(data)
    os.replace(fresh, path)


def emptied(path: Path) -> None:
    replaced(path, b"")


def altered(pack: Path) -> None:
    """A byte of the first object's compressed bytes flipped (after the 12-byte header and the
    object's own 2-byte one), as a disk fault would."""
    data = bytearray(pack.read_bytes())
    data[20] ^= 0xFF
    replaced(pack, bytes(data))


DAMAGES: dict[str, Callable[[Path], None]] = {
    "index emptied": emptied,
    "pack emptied": lambda index: emptied(index.with_suffix(".pack")),
    "pack altered": lambda index: altered(index.with_suffix(".pack")),
}


def indexes(store: MemoryStore) -> list[Path]:
    return sorted((store.home.root / "history" / "objects" / "pack").glob("*.idx"))


# The next start, after the power cut: a process of its own (one that had the pack open would read
# on in what it mapped), whose commits' entries each merge the small packs.
MERGING_COMMITS = """
import sys
from pathlib import Path
from remem.daemon.home import Home
from remem.daemon.memory import history
from remem.daemon.memory.batch import CHANGES
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
history.PACK_EVERY = 1
store = MemoryStore(Home(Path(sys.argv[1])))
revision = sys.argv[3]
for changes in sys.argv[4:]:
    done = store.commit_workspace(WorkspaceId.from_cwd(sys.argv[2]), revision, CHANGES.validate_json(changes))
    revision = done.revision
    print(done.model_dump_json())
"""
MERGES = 4


def remem(store: MemoryStore, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "REMEM_HOME": str(store.home.root)},
        check=False,
    )
