"""Session files and memory files are opened without following a link or waiting on a FIFO
swapped in after the scan that found them."""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from remem.daemon.safe_open import LINKED, NOT_REGULAR, Walk, moved, open_folder, open_regular, reason
from remem.daemon.sessions.errors import SessionLogError
from remem.daemon.sessions.harness_sources import file_digest, read_file
from remem.daemon.sessions.reader import read_session


def _within(seconds: float, call: Callable[[], object]) -> BaseException | None:
    """What `call` raised (None if nothing), failing the test if it has not ended by then."""
    raised: list[BaseException | None] = [None]

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            raised[0] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "it waits on the FIFO for a writer"
    return raised[0]


@pytest.mark.parametrize(
    "read",
    [read_file, file_digest, read_session],
    ids=["harness read", "harness digest", "dsh read"],
)
def test_a_fifo_in_place_of_a_session_file_is_refused_at_once(
    tmp_path: Path, read: Callable[[Path], object]
) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    raised = _within(5, lambda: read(fifo))
    assert isinstance(raised, (OSError, SessionLogError)), raised
    assert NOT_REGULAR in str(raised)


def test_a_link_is_refused_and_a_file_opens(tmp_path: Path) -> None:
    target = tmp_path / "target.jsonl"
    target.write_bytes(b"{}\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    with pytest.raises(OSError) as refused:
        open_regular(link)
    assert refused.value.errno == errno.ELOOP
    fd = open_regular(target)
    try:
        assert os.read(fd, 10) == b"{}\n"
    finally:
        os.close(fd)


def test_a_folder_on_the_way_from_the_root_is_never_followed_if_it_is_a_link(tmp_path: Path) -> None:
    """The root may be a link (the user named it); below it, no folder is followed, however deep."""
    real = tmp_path / "real"
    (real / "a" / "b").mkdir(parents=True)
    (real / "a" / "b" / "log.jsonl").write_bytes(b"{}\n")
    outside = tmp_path / "outside"
    (outside / "b").mkdir(parents=True)
    (outside / "b" / "log.jsonl").write_bytes(b"OUTSIDE\n")
    root = tmp_path / "root"
    root.symlink_to(real)
    fd = open_regular(root / "a" / "b" / "log.jsonl", root=root)
    try:
        assert os.read(fd, 10) == b"{}\n"
    finally:
        os.close(fd)
    (real / "a").rename(tmp_path / "a-real")
    (real / "a").symlink_to(outside)
    for make in (False, True):
        with pytest.raises(OSError) as linked:
            os.close(open_folder(root, root / "a" / "b", make=make))
        assert (linked.value.errno, linked.value.filename) == (errno.ELOOP, str(root / "a"))
    with pytest.raises(OSError) as refused:
        open_regular(root / "a" / "b" / "log.jsonl", root=root)
    assert refused.value.errno == errno.ELOOP and LINKED in reason(
        refused.value, root / "a" / "b" / "log.jsonl"
    )
    with pytest.raises(OSError) as outside_root:
        open_folder(root, tmp_path)
    assert outside_root.value.errno == errno.EINVAL


def test_the_folders_made_on_the_way_are_user_only_whatever_the_umask(tmp_path: Path) -> None:
    root = tmp_path / "new-root"
    was = os.umask(0)
    try:
        os.close(open_folder(root, root / "2026" / "12" / "04", make=True))
    finally:
        os.umask(was)
    made = [root, root / "2026", root / "2026" / "12", root / "2026" / "12" / "04"]
    assert [stat.S_IMODE(p.stat().st_mode) for p in made] == [0o700] * 4


def test_a_file_that_is_not_the_one_listed_is_refused(tmp_path: Path) -> None:
    listed = tmp_path / "log.jsonl"
    listed.write_bytes(b"{}\n")
    st = listed.stat()
    os.close(open_regular(listed, root=tmp_path, identity=(st.st_dev, st.st_ino)))
    listed.rename(tmp_path / "kept")
    listed.write_bytes(b"another file, same name\n")
    with pytest.raises(OSError) as replaced:
        open_regular(listed, root=tmp_path, identity=(st.st_dev, st.st_ino))
    assert replaced.value.errno == errno.ESTALE and moved(replaced.value)


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _read_through(walk: Walk, path: Path, root: Path) -> bytes:
    fd = walk.open_regular(path, root=root)
    try:
        return os.read(fd, 100)
    finally:
        os.close(fd)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_a_walk_holds_the_one_folder_its_files_lie_in_never_a_link_swapped_in_since(tmp_path: Path) -> None:
    """A listing's glances open each folder once while its files follow one another: the folder
    held is the one opened from the root, whatever its path names since; a folder opened anew
    is opened from the root as ever, link refused; and the walk holds one folder at most."""
    root = tmp_path / "root"
    days = [root / "2026" / "05" / f"{day:02d}" for day in (1, 2, 3)]
    for day in days:
        day.mkdir(parents=True)
        for n in (1, 2):
            (day / f"rollout-{n}.jsonl").write_bytes(f"{day.name}/{n}\n".encode())
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "rollout-2.jsonl").write_bytes(b"OUTSIDE\n")
    before = _open_descriptors()
    with Walk() as walk:
        for day in days[:2]:
            assert _read_through(walk, day / "rollout-1.jsonl", root) == f"{day.name}/1\n".encode()
            assert _open_descriptors() == before + 1
        # The folder held is swapped for a link out of the root: the walk reads on in the folder it opened.
        days[1].rename(root / "2026" / "05" / "moved")
        days[1].symlink_to(outside)
        assert _read_through(walk, days[1] / "rollout-2.jsonl", root) == b"02/2\n"
        # Another folder, then back: opened from the root again, and the link is refused.
        assert _read_through(walk, days[2] / "rollout-1.jsonl", root) == b"03/1\n"
        with pytest.raises(OSError) as linked:
            walk.open_regular(days[1] / "rollout-2.jsonl", root=root)
        assert (linked.value.errno, linked.value.filename) == (errno.ELOOP, str(days[1]))
        assert _open_descriptors() == before
    assert _open_descriptors() == before
