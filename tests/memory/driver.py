"""A separate process that drives the store, for crash-point and multi-process race tests.

python -m tests.memory.driver commit HOME CWD EXPECTED CHANGES_JSON
python -m tests.memory.driver commit-against-save HOME CWD EXPECTED CHANGES_JSON NAME TEXT
python -m tests.memory.driver replace-global HOME EXPECTED TEXT
python -m tests.memory.driver replace-global-against-save HOME EXPECTED TEXT SAVED
python -m tests.memory.driver replace-global-cut-short HOME EXPECTED TEXT WRITTEN
python -m tests.memory.driver read HOME CWD
python -m tests.memory.driver log HOME CWD
python -m tests.memory.driver update-settings HOME EXPECTED KEY VALUE
python -m tests.memory.driver update-settings-against-save HOME EXPECTED KEY VALUE SAVED
python -m tests.memory.driver update-settings-against-link HOME EXPECTED KEY VALUE LINKED
python -m tests.memory.driver race HOME CWD WORKER COUNT
python -m tests.memory.driver store-api-key HOME PROVIDER KEY
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from remem.daemon import fsutil, swap
from remem.daemon.consolidation.route import store_api_key
from remem.daemon.home import Home
from remem.daemon.memory import journal
from remem.daemon.memory.batch import CHANGES
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import PutChange, Record
from remem.daemon.safe_open import HeldFolder
from remem.daemon.settings import SettingsStore


def commit(home: str, cwd: str, expected: str, changes: str) -> None:
    store = MemoryStore(Home(Path(home)))
    result = store.commit_workspace(WorkspaceId.from_cwd(cwd), expected, CHANGES.validate_json(changes))
    print(result.model_dump_json())


def commit_against_save(home: str, cwd: str, expected: str, changes: str, name: str, text: str) -> None:
    """`commit`, while an editor saves `name` by hand just before the commit replaces it."""
    save_before(name, text)
    commit(home, cwd, expected, changes)


def save_before(name: str, text: str) -> None:
    """Make the next commit meet a hand save of `name` in the instant before its publish step."""
    apply = journal._apply

    def saving(folder: HeldFolder, step: journal.Step) -> None:
        if step.final == name:
            (folder.path / name).write_text(text)
        apply(folder, step)

    journal._apply = saving


def replace_global(home: str, expected: str, text: str) -> None:
    print(MemoryStore(Home(Path(home))).replace_global(expected, text).model_dump_json())


def replace_global_against_save(home: str, expected: str, text: str, saved: str) -> None:
    """`replace-global`, while an editor saves GLOBAL.md by hand after the commit compared it
    and just before its exchange."""
    save_before_exchange("GLOBAL.md", saved)
    replace_global(home, expected, text)


def save_before_exchange(name: str, text: str) -> None:
    """Make the next exchange publishing `name` meet a hand save of it, landed just before."""
    exchange = swap._exchange

    def saving(folder: HeldFolder, a: str, b: str) -> bool:
        if b == name:
            (folder.path / b).write_text(text)
        return exchange(folder, a, b)

    swap._exchange = saving


def replace_global_cut_short(home: str, expected: str, text: str, written: str) -> None:
    """`replace-global`, killed while it writes its temp: after the exclusive create and the
    first WRITTEN bytes, before the rest and the sync (a power cut there leaves it empty)."""

    def dying(path: Path, *parts: bytes | memoryview, dir_fd: int | None = None) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, fsutil.PRIVATE_FILE_MODE, dir_fd=dir_fd)
        os.write(fd, b"".join(bytes(part) for part in parts)[: int(written)])
        os.kill(os.getpid(), signal.SIGKILL)

    fsutil.write_synced = dying
    replace_global(home, expected, text)


def read(home: str, cwd: str) -> None:
    snap = MemoryStore(Home(Path(home))).read_workspace(WorkspaceId.from_cwd(cwd))
    print(json.dumps({r.name: r.content for r in snap.records}))


def log(home: str, cwd: str) -> None:
    print(len(MemoryStore(Home(Path(home))).history.log(WorkspaceId.from_cwd(cwd).key)))


def update_settings(home: str, expected: str, key: str, value: str) -> None:
    print(SettingsStore(Home(Path(home))).update(expected, {key: value}))


def update_settings_against_save(home: str, expected: str, key: str, value: str, saved: str) -> None:
    save_before_exchange("settings.yml", saved)
    update_settings(home, expected, key, value)


def update_settings_against_link(home: str, expected: str, key: str, value: str, linked: str) -> None:
    """`update-settings`, while `settings.yml` is made a link to LINKED (GNU stow) just before
    its exchange."""
    exchange = swap._exchange

    def linking(folder: HeldFolder, a: str, b: str) -> bool:
        if b == "settings.yml":
            (folder.path / b).unlink()
            (folder.path / b).symlink_to(linked)
        return exchange(folder, a, b)

    swap._exchange = linking
    update_settings(home, expected, key, value)


def store_key(home: str, provider: str, key: str) -> None:
    store_api_key(Home(Path(home)), provider, key)


def race(home: str, cwd: str, worker: str, count: str) -> None:
    """Read-modify-CAS `count` times on a shared counter record and on Global; print tallies."""
    store = MemoryStore(Home(Path(home)))
    workspace = WorkspaceId.from_cwd(cwd)
    conflicts = 0
    for n in range(1, int(count) + 1):
        while True:
            snap = store.read_workspace(workspace)
            total = next((int(r.content) for r in snap.records if r.name == "counter"), 0)
            changes = [_counter("counter", total + 1), _counter(f"worker-{worker}", n)]
            if store.commit_workspace(workspace, snap.revision, changes).status == "committed":
                break
            conflicts += 1
        while True:
            current = store.read_global()
            text = f"{current.content}{worker}-{n}\n"
            if store.replace_global(current.revision, text).status == "committed":
                break
            conflicts += 1
    print(json.dumps({"worker": worker, "commits": int(count) * 2, "conflicts": conflicts}))


def _counter(name: str, value: int) -> PutChange:
    record = Record(name=name, description=f"Counter {name}", type="project", content=f"{value}\n")
    return PutChange(action="put", record=record)


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    commands = {
        "commit": commit,
        "commit-against-save": commit_against_save,
        "replace-global": replace_global,
        "replace-global-against-save": replace_global_against_save,
        "replace-global-cut-short": replace_global_cut_short,
        "read": read,
        "log": log,
        "update-settings": update_settings,
        "update-settings-against-save": update_settings_against_save,
        "update-settings-against-link": update_settings_against_link,
        "race": race,
        "store-api-key": store_key,
    }
    commands[command](*args)
