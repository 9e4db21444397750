"""A pack index (or pack) truncated in place under a running process is damage said, not a crash.

libgit2 maps a pack's index into memory as it first reads from the pack, and reads it there for
as long as the repository is open: an index cut short in place afterwards (a restore or sync
tool writing into the existing file, a user's `truncate`) left the mapping past the file's end,
and the process's next read of the history was killed by SIGBUS, the daemon with every request
it served. A pack file changed under the process is now seen at its next use, as a folder
replaced is, and the repository opened afresh: libgit2 checks an index's size against the count
it holds as it opens it, so the read says the history is damaged, and the process goes on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from remem.daemon.memory.git_pack import pack_ids
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .history_packs import indexes
from .test_crash_recovery import EMPTY

# A process that reads an entry's files (libgit2 maps its pack's index), waits for the test to
# truncate that index in place, then reads them again.
_READ_TWICE = """
import sys
from pathlib import Path
from remem.daemon.home import Home
from remem.daemon.memory.history import HistoryError
from remem.daemon.memory.store import MemoryStore

store = MemoryStore(Home(Path(sys.argv[1])))
entry = sys.argv[2]
print(sorted(store.history.files_at(entry)), flush=True)
sys.stdin.readline()
try:
    print(sorted(store.history.files_at(entry)), flush=True)
except HistoryError as exc:
    print(f"refused: {exc}", flush=True)
"""


@pytest.mark.parametrize("suffix", [".idx", ".pack"])
def test_a_pack_file_truncated_under_a_reading_process_is_damage_said_and_the_process_goes_on(
    suffix: str, store: MemoryStore, workspace: WorkspaceId
) -> None:
    entry = store.commit_workspace(workspace, EMPTY, [put("alpha")]).history
    assert entry is not None
    [index] = [index for index in indexes(store) if entry in pack_ids(index)]
    reader = subprocess.Popen(
        [sys.executable, "-c", _READ_TWICE, str(store.home.root), entry],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "REMEM_HOME": str(store.home.root)},
    )
    assert reader.stdin is not None and reader.stdout is not None
    assert "alpha.md" in reader.stdout.readline()
    os.truncate(index.with_suffix(suffix), 0)  # in place: the same file, cut short
    out, err = reader.communicate("go\n", timeout=60)
    assert reader.returncode != -signal.SIGBUS, "killed by SIGBUS"
    assert reader.returncode == 0, err
    assert out.startswith("refused:") and "is damaged" in out, (out, err)
