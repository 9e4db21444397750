"""A file's stat stamp, and how old its last change must be before the stamp can be trusted.

Two writes of the same size within one timestamp tick, in place, leave the same stat (git's
"racily clean" files), so a stamp only proves a file unchanged once its ctime is more than
`RACY_NS` old. ctime, unlike mtime, cannot be set back by programs, so a restored timestamp does
not hide an edit; the rule assumes the system clock does not jump back by more than `RACY_NS`.
"""

from __future__ import annotations

import os

# FAT's 2 s timestamp tick is the coarsest remem may meet; ext4 and APFS tick far finer.
RACY_NS = 2_000_000_000

Stamp = tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns


def stamp(st: os.stat_result) -> Stamp:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
