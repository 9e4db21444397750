"""A home given through a link that is re-pointed (a backup restored in its place, the synced
folder moved) is recognized where it is now, never where it was.

The home's real path was resolved once, and each document's path mapped once, for good: after
the link was re-pointed from A to B, A's `GLOBAL.md` was still taken as the home's and B's own
`GLOBAL.md` as a file outside it.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

from remem.daemon.home import Home
from remem.lsp.documents import home_path


def test_a_re_pointed_home_link_is_followed_to_its_new_folder(tmp_path: Path) -> None:
    first, second, link = tmp_path / "A", tmp_path / "B", tmp_path / "home"
    for folder in (first, second):
        (folder / "memory").mkdir(parents=True)
    link.symlink_to(first, target_is_directory=True)
    home = Home(link)
    ls = SimpleNamespace(home=home)

    def path(file: Path) -> Path | None:
        return home_path(ls, file.as_uri())  # type: ignore[arg-type]

    assert path(first / "memory" / "GLOBAL.md") == home.global_file
    link.unlink()
    link.symlink_to(second, target_is_directory=True)
    assert path(first / "memory" / "GLOBAL.md") == first / "memory" / "GLOBAL.md"
    assert path(second / "memory" / "GLOBAL.md") == home.global_file
    assert path(home.global_file) == home.global_file

    # The folder moved and the link re-pointed to its new place: the same folder, a new path.
    moved = tmp_path / "B-moved"
    second.rename(moved)
    link.unlink()
    link.symlink_to(moved, target_is_directory=True)
    assert path(second / "memory" / "GLOBAL.md") == second / "memory" / "GLOBAL.md"
    assert path(moved / "memory" / "GLOBAL.md") == home.global_file

    # A backup restored in the folder's place, the link as it was.
    moved.rename(tmp_path / "B-old")
    (moved / "memory").mkdir(parents=True)
    assert path(moved / "memory" / "GLOBAL.md") == home.global_file
    assert path(tmp_path / "B-old" / "memory" / "GLOBAL.md") == tmp_path / "B-old" / "memory" / "GLOBAL.md"

    # No home folder at all: nothing is mapped into it.
    link.unlink()
    os.symlink(tmp_path / "nowhere", link)
    assert path(moved / "memory" / "GLOBAL.md") == moved / "memory" / "GLOBAL.md"
