"""A memory history that is not this user's, or that the OS refuses to read, is the home in the
way, said naming it and the fix, with and without a daemon; nothing is moved. Only a damaged
history is set aside and started again.

Before, the repository's open failed (libgit2 opens no repository but its user's: "is not owned
by current user"; a folder of it this user may not list) and that was taken for damage: the
whole history was renamed `history.broken-<time>` and started again, so `remem memory log`
showed only entries made since, after a mere `sudo remem …`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.store import MemoryStore
from remem.daemon.server.runtime import DaemonPaths
from tests.cli_process import remem
from tests.permissions import as_user, daemon_bound, modes, remem_bound

ANOTHER_UID = 4242  # a user no test runs as: chown takes a number with no name too


@pytest.fixture
def history(store: MemoryStore) -> Path:
    """A history holding one entry of Global memory."""
    store.replace_global(store.read_global().revision, "# Global\n\n- Kept.\n")
    assert [entry.actor.kind for entry in store.history.log(None)] == ["cli"]
    return store.home.root / "history"


@contextmanager
def owned_by(folder: Path, uid: int) -> Iterator[None]:
    """`folder` and all in it given to the user `uid`, open to everyone, then back."""
    if os.geteuid() != 0:
        pytest.skip("only root can give a folder to another user")
    mode = folder.stat().st_mode

    def chown_all(to: int) -> None:
        for at, folders, files in os.walk(folder):
            for name in [at, *(os.path.join(at, each) for each in folders + files)]:
                os.chown(name, to, -1, follow_symlinks=False)

    chown_all(uid)
    folder.chmod(0o777)
    try:
        yield
    finally:
        chown_all(os.geteuid())
        folder.chmod(mode)


def remem_command(home: Home) -> list[str]:
    return [sys.executable, "-m", "remem.daemon", "--home", str(home.root)]


def set_aside(home: Home) -> list[str]:
    return sorted(path.name for path in home.root.glob("history.*"))


@pytest.fixture(params=[False, True], ids=["no-daemon", "daemon"])
def daemon(request: pytest.FixtureRequest, home: Home) -> Iterator[bool]:
    yield request.param
    if request.param:
        remem(home, "daemon", "stop")


def test_another_users_history_is_refused_naming_its_owner_and_the_fix_and_nothing_is_moved(
    home: Home, history: Path, daemon: bool
) -> None:
    with owned_by(history, ANOTHER_UID):
        log = remem(home, "memory", "log", "--global", daemon=daemon)

    said = log.stderr.strip().splitlines()[-1]
    assert log.returncode == 2, log
    assert said.startswith(
        f"remem: remem's home {home.root} cannot be used: {history} belongs to another user"
    ), said
    assert f"(uid {ANOTHER_UID})" in said and "nothing was moved" in said, said
    # Root meeting a user's history: that user's `sudo remem …`, not a history to hand to root.
    assert "nothing was moved: run remem as 4242, without sudo" in said, said
    assert set_aside(home) == []
    assert [entry.actor.kind for entry in MemoryStore(home).history.log(None)] == ["cli"]


def test_a_change_with_another_users_history_commits_and_says_why_it_has_no_entry(
    home: Home, history: Path, tmp_path: Path
) -> None:
    text = tmp_path / "GLOBAL.md"
    text.write_text("# Global\n\n- Changed.\n")
    revision = MemoryStore(home).read_global().revision
    with owned_by(history, ANOTHER_UID):
        changed = remem(
            home, "memory", "replace-global", "--expected-revision", revision, "--file", str(text)
        )

    assert changed.returncode == 0, changed
    assert f"{history} belongs to another user" in changed.stderr, changed.stderr
    assert set_aside(home) == []
    assert [entry.actor.kind for entry in MemoryStore(home).history.log(None)] == ["cli"]  # kept


def test_a_history_folder_this_user_may_not_list_is_refused_naming_it_and_nothing_is_moved(
    home: Home, history: Path
) -> None:
    refs = history / "refs"
    with modes((refs, 0o100)):  # passed through, never listed: libgit2 lists it to read branches
        if as_user(["ls", str(refs)], {**os.environ}).returncode == 0:
            pytest.skip("run as root, whose processes read past permissions still")
        log = as_user([*remem_command(home), "memory", "log", "--global"], {**os.environ})

    assert log.returncode == 2, log
    assert log.stderr.strip().splitlines()[-1] == (
        f"remem: remem's home {home.root} cannot be used: {refs} cannot be read (Permission denied); "
        "let your user read it, or choose another home with --home or $REMEM_HOME"
    )
    assert set_aside(home) == []
    assert [entry.actor.kind for entry in MemoryStore(home).history.log(None)] == ["cli"]


def test_a_folder_of_its_objects_this_user_may_not_list_is_refused_naming_it_not_a_bug(
    home: Home, history: Path
) -> None:
    """It opened, and the log's first read of an object ended "internal error, a bug in remem
    (OSError: failed to open directory …)", exit 4."""
    packs = history / "objects" / "pack"
    with modes((packs, 0)):
        if as_user(["ls", str(packs)], {**os.environ}).returncode == 0:
            pytest.skip("run as root, whose processes read past permissions still")
        log = as_user([*remem_command(home), "memory", "log", "--global"], {**os.environ})

    assert log.returncode == 2, log
    assert log.stderr.strip().splitlines()[-1] == (
        f"remem: remem's home {home.root} cannot be used: {packs} cannot be read (Permission denied); "
        "let your user read it, or choose another home with --home or $REMEM_HOME"
    )
    assert set_aside(home) == []


def test_a_damaged_history_is_still_set_aside_and_started_again(home: Home, history: Path) -> None:
    """A folder where a file of the repository belongs is damage, not the OS refusing it:
    refused, every command and commit met it again, and the history never mended."""
    (history / "packed-refs").mkdir()
    log = remem(home, "memory", "log", "--global")
    assert log.returncode == 0, log
    assert "set aside as history.broken-" in log.stderr, log.stderr
    assert len(set_aside(home)) == 1


def _its_pack(history: Path) -> Path:
    [pack] = (history / "objects" / "pack").glob("*.pack")
    return pack


@pytest.mark.parametrize(
    "unreadable", [_its_pack, lambda history: history / "refs" / "heads" / "global"], ids=["pack", "branch"]
)
@pytest.mark.parametrize("through_daemon", [False, True], ids=["no-daemon", "daemon"])
def test_a_file_of_the_history_this_user_may_not_read_is_refused_naming_it_never_called_damaged(
    home: Home, history: Path, unreadable: Callable[[Path], Path], through_daemon: bool
) -> None:
    """A pack libgit2 may not open it skips: its entries read as gone, and `memory log` said the
    history was damaged, to be moved aside (HISTORY_REFUSED, exit 1); a branch's file that did
    not open had the whole history set aside and started again."""
    file = unreadable(history)
    with contextlib.ExitStack() as held:
        if through_daemon:
            held.enter_context(daemon_bound(home))
        held.enter_context(modes((file, 0)))
        if as_user(["cat", str(file)], {**os.environ}).returncode == 0:
            pytest.skip("run as root, whose processes read past permissions still")
        log = remem_bound(home, "memory", "log", "--global", "--json", daemon=through_daemon)

    assert log.returncode == 2, log
    assert json.loads(log.stdout)["error"] == {
        "code": "HOME_UNUSABLE",
        "message": f"remem's home {home.root} cannot be used: {file} cannot be read (Permission denied); "
        "let your user read it, or choose another home with --home or $REMEM_HOME",
    }
    assert "damaged" not in log.stderr and "set aside" not in log.stderr, log.stderr
    assert set_aside(home) == []
    assert [entry.actor.kind for entry in MemoryStore(home).history.log(None)] == ["cli"]


def test_a_memory_write_the_history_cannot_record_for_a_pack_it_may_not_read_names_the_pack(
    home: Home, history: Path, store: MemoryStore, tmp_path: Path
) -> None:
    """The write commits, and the warning of its missing entry said only libgit2's words for what
    it then missed ("the reference 'refs/heads/global' cannot be peeled"), never the pack."""
    pack = _its_pack(history)
    text = tmp_path / "global.md"
    text.write_text("# Global\n\n- New.\n")
    revision = store.read_global().revision
    with modes((pack, 0)):
        if as_user(["cat", str(pack)], {**os.environ}).returncode == 0:
            pytest.skip("run as root, whose processes read past permissions still")
        wrote = remem_bound(
            home, "memory", "replace-global", "--expected-revision", revision, "--file", str(text), "--json"
        )

    assert wrote.returncode == 0 and json.loads(wrote.stdout)["history"] is None, wrote
    said = next(line for line in DaemonPaths(home).log.read_text().splitlines() if "could not record" in line)
    assert said.endswith(
        f"memory history: could not record global (remem's home {home.root} cannot be used: {pack} "
        "cannot be read (Permission denied); let your user read it, or choose another home with --home "
        "or $REMEM_HOME)"
    ), said
