"""Opening a file to read it, never through a link and never waiting on one that is not a file.

Session logs and memory files are found by a scan, then opened: in between, a link or a FIFO
can be swapped in. A link could lead out of the roots (refused: `ELOOP`); opening a FIFO or a
device would wait for a writer and hold a daemon thread for good (refused: `EINVAL`).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

NOT_REGULAR = "not a regular file"


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of the regular file at `path`; `OSError` otherwise (`ELOOP` for a
    link, `EINVAL` for anything but a regular file)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, NOT_REGULAR, os.fspath(path))
    return fd


def refused(exc: OSError) -> bool:
    """Whether `open_regular` refused the path for what is there (a link, or no regular file)."""
    return exc.errno in (errno.ELOOP, errno.EINVAL)


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """The bytes of the regular file at `path`, opened as `open_regular` opens it (`OSError`
    likewise); None when it holds more than `limit` bytes (`read_capped`)."""
    with os.fdopen(open_regular(path), "rb") as handle:
        return read_capped(handle, limit)


def read_capped(handle: BinaryIO, limit: int) -> bytes | None:
    """The open file's bytes, or None when it holds more than `limit`: no more than one byte
    past `limit` is read, even from a file that grows meanwhile."""
    size = os.fstat(handle.fileno()).st_size
    if size > limit:
        return None
    data = handle.read(size + 1)  # sized by the file: asking for `limit` costs its allocation
    if len(data) > size:  # it grew since: read on, up to the limit
        data += handle.read(limit + 1 - len(data))
    return None if len(data) > limit else data
