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

from remem.daemon.safe_open import LINKED, NOT_REGULAR, moved, open_folder, open_regular, reason
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
