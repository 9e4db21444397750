"""A history write the disk refuses leaves nothing behind and is said as a full disk, not damage.

A history that cannot be started (a fresh home on a full disk) left its `.history-<hex>` temp
folders in the home for good and was refused as "cannot be read"; a pack the disk refused left
its `tmp_pack_<hex>` (or, when the index was refused, a `.pack` nothing reads); and a merge of the
small packs the disk refused, run after the entry's branch had moved, said the entry was not
written. The refusals are real: a tmpfs filled up (`tests/unwritable.full_disk`), or a process
under a file-size limit (`RLIMIT_FSIZE`: its writes past the limit fail with EFBIG).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from remem.daemon.memory import history
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.unwritable import fill, full_disk

from .factory import put
from .test_crash_recovery import EMPTY


def run(home: Home, *args: str) -> tuple[int, str, str]:
    """The CLI without a daemon; what it did not catch is raised (the real CLI's exit 4)."""
    result = CliRunner().invoke(cli, ["--home", str(home.root), "--no-daemon", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def history_temps(home: Home) -> list[str]:
    return sorted(name for name in os.listdir(home.root) if name.startswith(".history-"))


def test_a_history_a_full_disk_cannot_start_is_refused_with_the_remedy_and_leaves_no_folder(
    tmp_path: Path, workspace: WorkspaceId
) -> None:
    with full_disk(tmp_path / "disk") as disk:
        home = Home(disk / "home")
        # Memory the history has not recorded: `memory log` starts it to record that, and cannot.
        MemoryStore(home, history=False).commit_workspace(workspace, EMPTY, [put("alpha")])
        fill(disk)
        for _ in range(2):
            code, out, err = run(home, "memory", "log", "--cwd", workspace.cwd, "--json")
            assert code == 1, (code, out, err)
            said = json.loads(out)["error"]
            assert said["code"] == "HISTORY_REFUSED", out
            assert said["message"] == (
                f"the memory history at {home.root / 'history'} could not be started: {home.root} refused "
                "a write (No space left on device), so nothing was changed there; to go on, free some "
                "space on its disk, then retry"
            )
            assert history_temps(home) == [] and not (home.root / "history").exists()
        (disk / "filler").unlink()
        code, out, err = run(home, "memory", "log", "--cwd", workspace.cwd, "--json")
        assert code == 0 and [e["actor"]["kind"] for e in json.loads(out)["entries"]] == ["recovered"], out
        assert history_temps(home) == [] and (home.root / "history" / "HEAD").is_file()


def test_a_log_of_a_home_holding_nothing_on_a_full_disk_answers_empty_and_makes_nothing(
    tmp_path: Path, workspace: WorkspaceId
) -> None:
    with full_disk(tmp_path / "disk") as disk:
        home = Home(disk / "home")
        home.root.mkdir()
        fill(disk)
        code, out, err = run(home, "memory", "log", "--cwd", workspace.cwd, "--json")
        assert code == 0 and json.loads(out)["entries"] == [], (out, err)
        assert os.listdir(home.root) == []  # decision 0499


def test_a_history_folder_a_crash_left_is_removed_once_stale(home: Home, workspace: WorkspaceId) -> None:
    MemoryStore(home).commit_workspace(workspace, EMPTY, [put("alpha")])
    stale, fresh = home.root / ".history-0123abcd", home.root / ".history-4567cdef"
    for folder in (stale, fresh):  # as `init_repository` leaves one when its process is killed
        (folder / "objects").mkdir(parents=True)
        (folder / "description").write_text("Unnamed repository\n")
    hour_ago = time.time() - 3600
    os.utime(stale, (hour_ago, hour_ago))
    code, out, err = run(home, "memory", "log", "--cwd", workspace.cwd, "--json")  # a new process's open
    assert code == 0 and len(json.loads(out)["entries"]) == 1, (out, err)
    # the fresh one may be another process's, still being made
    assert history_temps(home) == [fresh.name]


# Run in a process of its own, under a file-size limit: `write_pack` of objects whose pack (or,
# with many small objects, only whose index) is past the limit.
_WRITE_PACK = """
import errno, random, resource, sys
from pathlib import Path
from remem.daemon.memory.git_pack import write_pack
pack_dir, kind = Path(sys.argv[1]), sys.argv[2]
if kind == "pack":
    objects = [(b"blob", random.Random(1).randbytes(16384))]  # a pack of 16 KiB: over the limit
else:
    objects = [(b"blob", b"%d" % n) for n in range(300)]  # a pack of 4 KiB, its index of 9 KiB
resource.setrlimit(resource.RLIMIT_FSIZE, (6000, resource.RLIM_INFINITY))
try:
    write_pack(pack_dir, objects)
except OSError as exc:
    print(errno.errorcode[exc.errno])
"""


def test_a_pack_the_disk_refuses_leaves_no_temp(tmp_path: Path) -> None:
    for kind in ("pack", "index"):
        pack_dir = tmp_path / kind
        pack_dir.mkdir()
        done = subprocess.run(
            [sys.executable, "-c", _WRITE_PACK, str(pack_dir), kind],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0 and done.stdout == "EFBIG\n", (done.stdout, done.stderr)
        # neither a temp nor a pack without its index, which no reader sees and no merge takes
        assert os.listdir(pack_dir) == [], kind


def test_an_entry_a_full_disk_refuses_leaves_no_pack_temp(tmp_path: Path, workspace: WorkspaceId) -> None:
    """The reviewer's case: the memory commit fits, the pack of its history entry does not."""
    with full_disk(tmp_path / "disk", "1m") as disk:
        home = Home(disk / "home")
        store = MemoryStore(home)
        revision = EMPTY
        for n in range(5):
            revision = store.commit_workspace(workspace, revision, [put(f"r{n}")]).revision
        fill(disk)
        filler = disk / "filler"
        os.truncate(filler, filler.stat().st_size - 16 * 1024)
        body = os.urandom(4000).hex() + "\n"  # an 8 KB record: its pack (hex compresses to half) 4 KB
        done = store.commit_workspace(workspace, revision, [put("large", body)])
        assert done.status == "committed" and done.history is None
        pack_dir = home.root / "history" / "objects" / "pack"
        assert [name for name in os.listdir(pack_dir) if not name.startswith("pack-")] == []
        packs = {Path(name).stem for name in os.listdir(pack_dir)}
        assert all((pack_dir / f"{name}.idx").is_file() for name in packs)


# Run in a process of its own: entries written, then one written under a file-size limit that its
# own small pack fits in but the merge of every small pack (one per entry, as it is time to merge
# after every entry) does not.
_MERGE = """
import json, os, random, resource, sys
from pathlib import Path
from remem.daemon.home import Home
from remem.daemon.memory import history
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import PutChange, Record

def put(name, body="Why it matters.\\n"):
    record = Record(name=name, description="About it", type="project", content=body)
    return PutChange(action="put", record=record)

root = Path(sys.argv[1])
store, workspace = MemoryStore(Home(root / "home")), WorkspaceId.from_cwd(root / "project")
history.PACK_EVERY = 1 << 20  # no merge among the first entries (unless one's id starts 0000)
revision = store.read_workspace(workspace).revision
for n in range(5):
    body = random.Random(n).randbytes(1500).hex() + "\\n"
    revision = store.commit_workspace(workspace, revision, [put(f"r{n}", body)]).revision
history.PACK_EVERY = 1  # every entry is followed by a merge
resource.setrlimit(resource.RLIMIT_FSIZE, (8192, resource.RLIM_INFINITY))
done = store.commit_workspace(workspace, revision, [put("small")])
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
packs = len([n for n in os.listdir(store.home.root / "history/objects/pack") if n.endswith(".idx")])
result = {"history": done.history, "trouble": store.history.trouble(workspace.key), "packs": packs}
log = store.history.log(workspace.key)
result["logged"] = [e.id for e in log[:1]]
done = store.commit_workspace(workspace, done.revision, [put("later")])
packs = len([n for n in os.listdir(store.home.root / "history/objects/pack") if n.endswith(".idx")])
result.update(later=done.history, packs_later=packs, entries=len(store.history.log(workspace.key)))
print(json.dumps(result))
"""


def test_a_merge_the_disk_refuses_is_a_warning_and_the_entry_is_written(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _MERGE, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["history"] is not None and result["logged"] == [result["history"]], result
    assert result["trouble"] is None and result["packs"] == 6, result  # the small packs stay
    assert "could not write" not in done.stderr, done.stderr
    assert "could not merge the small packs" in done.stderr and "File too large" in done.stderr
    assert result["later"] is not None and result["packs_later"] == 1 and result["entries"] == 7, result


def test_a_pack_temp_a_killed_writer_left_is_removed_at_the_next_merge(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    revision = store.commit_workspace(workspace, EMPTY, [put("alpha")]).revision
    pack_dir = store.home.root / "history" / "objects" / "pack"
    stale, fresh = pack_dir / "tmp_pack_0123456789ab", pack_dir / "tmp_pack_cdef01234567"
    for temp in (stale, fresh):
        temp.write_bytes(b"PACK\0\0\0\2")
    hour_ago = time.time() - 3600
    os.utime(stale, (hour_ago, hour_ago))
    monkeypatch.setattr(history, "PACK_EVERY", 1)  # a merge after this entry
    assert store.commit_workspace(workspace, revision, [put("beta")]).history is not None
    assert sorted(name for name in os.listdir(pack_dir) if name.startswith("tmp_")) == [fresh.name]
    assert len([name for name in os.listdir(pack_dir) if name.endswith(".idx")]) == 1  # merged
