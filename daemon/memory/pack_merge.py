"""The merge of the memory history's small packs: each entry's pack, earlier merges still small
and loose objects an older remem wrote, merged into one pack with deltas, then dropped.

Each object is read whole before the merge adds it: a small pack or a loose object that does not
read, or a folder of loose objects the OS refuses to list, is left out of the merges and told to
the caller (`merge_small_packs`'s `left_out`) as the history's damage, and a `.pack` without
its index (never opened nor removed) as `Unindexed`, while the OS's trouble that passes by itself (no file
descriptor or memory left for now) stops the merge, left to a later one. libgit2 says the OS's
failures as a GitError ending with the OS's words, or as an object not found; `os_trouble` tells
them from damage.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from ..faults import faultpoint
from .git_pack import pack_ids, packs_without_index, remove_leftovers, small_packs

try:
    import pygit2
except ImportError:  # pragma: no cover - a dependency; kept so memory works without it
    pygit2 = None  # type: ignore[assignment]

MERGED_MAX = 2000  # objects in a pack still merged again: merges stay small, packs few
GIT_ERRORS: tuple[type[Exception], ...] = () if pygit2 is None else (pygit2.GitError,)
# What an object a merge reads before adding it raises when it does not read (`_looking_up`
# saying it gone as a GitError): that, or its pack's index is no index, or its name no id. A bare
# KeyError, or a ValueError, met elsewhere in a merge is a bug's, not the history's damage.
# libgit2 raises the same for its own failure to open a file (`os_trouble`), which is no damage.
_UNMERGEABLE: tuple[type[Exception], ...] = (ValueError, *GIT_ERRORS)
# What pygit2 raises for the OS's failure in libgit2 (no errno in it), and Python's own.
PASSING: tuple[type[Exception], ...] = (OSError, MemoryError)
# How libgit2 ends the message of an OS error it says as a GitError (`<what>: <strerror>`).
_OS_WORDS = {f": {os.strerror(code)}": code for code in sorted(errno.errorcode)}
# The OS's refusals that pass by themselves: a merge that meets one on reading an object is left
# to a later one. Any other refusal of an object's own file (a link, a permission) lasts.
_PASSING_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN, errno.EINTR})

# A `.pack` without its index, never removed nor opened (decision 0483): an older remem's killed
# merge left it (a copy of what its merged pack holds), or a copy tool restores it ahead of its
# index, perhaps the only copy of entries. What it costs is disk alone; what mends it, the user's.
_UNINDEXED = (
    "its pack {} has no index: libgit2 does not read it; if a copy tool is still restoring the "
    "history, its index will follow; otherwise `git index-pack` can rebuild the index, or remove the file"
)

# What does not read (said so), the files it is read from, and why.
LeftOut = Callable[[str, list[Path], BaseException], None]


class Unindexed(FileNotFoundError):
    """Why a `.pack` without its index is left out: no damage of the history's (what it holds is
    read through other packs or nowhere yet), so it is said without the damage's advice."""


def merge_small_packs(repo: pygit2.Repository, left_out: LeftOut) -> bool:
    """Merge the small packs (each entry's, and earlier merges still small) and any loose
    objects (written by an earlier remem) into one pack, with deltas, then drop what was
    merged; whether a merge was written. The caller holds the writing lock."""
    objects = Path(repo.path) / "objects"
    remove_leftovers(objects / "pack")  # the writing lock is held: no writer of remem's is at work
    for pack in packs_without_index(objects / "pack"):
        index = pack.with_suffix(".idx")
        no_index = Unindexed(errno.ENOENT, os.strerror(errno.ENOENT), index.name)
        left_out(_UNINDEXED.format(pack.stem), [pack, index], no_index)
    packs = small_packs(objects / "pack", MERGED_MAX)
    loose = _loose_objects(objects, left_out)
    if len(packs) + len(loose) < 2:
        return False
    read = {index: _pack_read(repo, index, left_out) for index in packs}
    read |= {path: _loose_read(repo, path, left_out) for path in loose}
    merged = {path: oids for path, oids in read.items() if oids is not None}
    if len(merged) < 2:  # one pack written again would be named as it is, then removed
        return False
    builder = pygit2.PackBuilder(repo)
    with _looking_up():
        for oid in (oid for oids in merged.values() for oid in oids):
            builder.add(oid)
        builder.write()
    faultpoint("history.merge.after-write")
    # The pack first: an index left without it (a merge killed here) is unseen by readers as
    # a pack without its index is, and the next merge takes its objects (read from the merged
    # pack) and removes it. (An older remem removed the index first: a `.pack` such a kill left
    # is kept, and said above.)
    for index in (index for index in packs if index in merged):
        index.with_suffix(".pack").unlink(missing_ok=True)
        faultpoint("history.merge.mid-removal")
        index.unlink(missing_ok=True)
    faultpoint("history.merge.after-pack-removal")
    for path in (path for path in loose if path in merged):  # each is in the pack now
        path.unlink(missing_ok=True)
    return True


def _loose_objects(objects: Path, left_out: LeftOut) -> list[Path]:
    """The files of the loose objects in `objects/<2 hex>/`. A folder of them the OS refuses to
    list for good (its permissions taken away) is left out, told to `left_out` as the history's
    damage: its refusal stopped every merge, one more small pack staying per entry. Only the OS's
    trouble that passes by itself stops the merge; a folder gone meanwhile holds nothing."""
    found = []
    for folder in objects.iterdir():
        if len(folder.name) != 2 or not folder.is_dir():
            continue
        try:
            names = os.listdir(folder)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as refused:
            if passes(refused):
                raise
            left_out(f"its loose-object folder {folder.name} cannot be listed", [folder], refused)
            continue
        found += [folder / name for name in names if len(name) == 38]
    return found


def _pack_read(repo: pygit2.Repository, index: Path, left_out: LeftOut) -> list[pygit2.Oid] | None:
    """The objects of the small pack of `index`, each read whole (`_read_whole`)."""
    files = [index, index.with_suffix(".pack")]
    return _read_whole(repo, lambda: pack_ids(index), files, f"its pack {index.stem} does not read", left_out)


def _loose_read(repo: pygit2.Repository, path: Path, left_out: LeftOut) -> list[pygit2.Oid] | None:
    """The loose object at `path` (objects/<2 hex>/<38 hex>), read whole (`_read_whole`)."""
    oid = path.parent.name + path.name
    return _read_whole(repo, lambda: [oid], [path], f"its loose object {oid} does not read", left_out)


def _read_whole(
    repo: pygit2.Repository, ids: Callable[[], list[str]], files: list[Path], what: str, left_out: LeftOut
) -> list[pygit2.Oid] | None:
    """The objects `ids` names, each read whole (decompressed) before a merge adds it: adding
    one only finds it, so altered bytes showed only as the merge was written, which then
    failed for good. None when one does not read (`files`: those they are read from): `what`
    (which says so) is left as it is, out of the merges, its bytes perhaps still of use to
    `git index-pack`, and told to `left_out` as the history's damage, with the OS's refusal of
    a file if it refused one (a link, a permission: no later merge would read it either). Its
    entries' reads say so too. Only the OS's trouble that passes by itself (`passes`) stops the merge, left
    to a later one."""
    try:
        oids = [pygit2.Oid(hex=oid) for oid in ids()]
        with _looking_up():
            for oid in oids:
                repo.odb.read(oid)
    except (*_UNMERGEABLE, *PASSING) as exc:
        trouble = os_trouble(exc, files)
        if trouble is not None and passes(trouble):
            raise trouble from None
        left_out(what, files, refusal(files) or exc)
        return None
    return oids


@contextlib.contextmanager
def _looking_up() -> Iterator[None]:
    """Around pygit2's calls that look objects up: one not found is said as a GitError, as pygit2
    says it from 1.21 on (NotFoundError); an earlier pygit2 raised a bare KeyError, which anywhere
    else in a merge is a bug's."""
    try:
        yield
    except KeyError as exc:
        if isinstance(exc, GIT_ERRORS):
            raise
        raise pygit2.GitError(*exc.args) from exc


def os_trouble(exc: Exception, opened: list[Path]) -> Exception | None:
    """The OS's failure behind a merge's error `exc`, None when there is none: the history is
    damaged. libgit2 says one as an OSError, as a GitError ending with the OS's words (`failed to
    create temporary file '...': Too many open files`), or not at all: an object of a pack it
    could not open (no file descriptor left) is only "not found". So the files it read,
    `opened`, are opened once more, and the OS's refusal is the reason; a file gone is damage."""
    if isinstance(exc, PASSING) or os_errno(exc) is not None:
        return exc
    return refusal(opened)


def refusal(paths: list[Path]) -> OSError | None:
    """The OS's refusal to open one of `paths`, None when each opens or is gone. A link is not
    followed, and refused (`ELOOP`): it may lead anywhere, and libgit2 reads none as an object."""
    for path in paths:
        try:
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW))
        except FileNotFoundError:
            continue
        except OSError as refused:
            return refused
    return None


def passes(trouble: BaseException) -> bool:
    """Whether the OS's `trouble` passes by itself (no memory or file descriptor left for now)."""
    return isinstance(trouble, MemoryError) or os_errno(trouble) in _PASSING_ERRNOS


def os_errno(exc: BaseException) -> int | None:
    """The errno of the OS's error `exc`, or None. libgit2 says it only in its message, ending
    with the error's text (`...: No space left on device`); pygit2's OSError has no errno."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc.errno
    text = str(exc)
    return next((code for words, code in _OS_WORDS.items() if text.endswith(words)), None)
