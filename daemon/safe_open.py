"""Opening a file to read it, never through a link and never waiting on one that is not a file.

Session logs and memory files are found by a scan, then opened: in between, a link or a FIFO
can be swapped in. A link could lead out of the roots (refused: `ELOOP`); opening a FIFO or a
device would wait for a writer and hold a daemon thread for good (refused: `EINVAL`).
"""

from __future__ import annotations

import errno
import os
import stat

NOT_REGULAR = "not a regular file"


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of the regular file at `path`; `OSError` otherwise (`ELOOP` for a
    link, `EINVAL` for anything but a regular file)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, NOT_REGULAR, os.fspath(path))
    return fd
