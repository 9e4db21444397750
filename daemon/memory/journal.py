"""Atomic workspace generations through a redo journal, and their crash recovery.

Protocol: every new file is written to a synced temp file; then the journal naming each step
(temp, final name, digest of the bytes the commit compared, digest of the new bytes) is
published atomically (the commit point); then each temp is exchanged with its final name, which
keeps record paths stable for editors, and the displaced file is checked to be the one
compared (daemon/swap.py). A file saved by hand since the comparison undoes the steps taken and
the commit reports a conflict; a record a step made and a person saved since stays as saved.
Last the folder is synced, and the journal is removed, then the displaced files. The exchanges
are not synced one by one: while the journal is on disk it replays any step a power cut undid
(decision 0190). A write the file system refuses before
the commit point removes the temps written so far, and a step it refuses outright after it undoes
the steps before it, as a displaced file does: either way the commit is `Unwritable`, changing
nothing (decision 0398).

Recovery rolls a present journal forward step by step, judging each by digests (so a step is
never applied twice), and otherwise discards temps: a crash at any instant leaves exactly the
old or exactly the new generation, except that a file saved by hand after the crash (or
displaced in the instant before it) is kept as saved, the generation's version of it beside it
as `<name>.unmerged-*`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator

from ..faults import faultpoint
from ..fsutil import (
    Unwritable,
    fits,
    is_refused_write,
    is_temp_name,
    raise_as_unwritable,
    remove_stale_temps,
    temp_path_for,
)
from ..safe_open import HeldFolder
from ..swap import (
    ABSENT,
    ANY,
    EMPTY,
    Displaced,
    digest,
    digest_at,
    put_back,
    set_aside,
    swap_back,
    swap_in,
    swap_out,
    watch_put_back,
    write_temp_at,
)
from .canonical import MEMORY_FILE_MAX_BYTES

JOURNAL_NAME = ".remem-journal.json"


class JournalUnreadable(Exception):
    """A journal that cannot be replayed: nothing is touched until a person decides."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path} is not a readable remem journal")
        self.path = path


class Step(BaseModel):
    """Put `temp` at `final` (or, with `after` None, delete `final` by moving it to `temp`)."""

    model_config = ConfigDict(extra="forbid")
    temp: str
    final: str
    before: str  # digest of the compared bytes, ABSENT or ANY
    after: str | None

    # A journal is replayed blindly during recovery: it may only name files in its folder.
    @field_validator("temp", "final")
    @classmethod
    def _plain(cls, name: str) -> str:
        if "/" in name or name in ("", ".", ".."):
            raise ValueError("journal entries must be plain file names")
        return name


class Journal(BaseModel):
    model_config = ConfigDict(extra="forbid")
    revision: str
    steps: list[Step]


class FolderMoved(Exception):
    """The path of the folder a commit opened no longer names it (moved, replaced, removed).
    Before the commit point nothing was published and no temp is left; after it (`published`),
    the steps went on in the folder that was opened, as far as it still exists."""

    def __init__(self, path: Path, *, published: bool = False) -> None:
        super().__init__(f"{path} was moved, replaced or removed during the commit")
        self.path, self.published = path, published


def write_generation(
    folder: HeldFolder,
    revision: str,
    writes: dict[str, bytes],
    deletes: list[str],
    expected: Mapping[str, str],
) -> None:
    """Publish one generation in `folder`; the caller holds the scope's exclusive lock.

    `expected` gives, for every written or deleted name, what the caller compared it as (a
    digest, ABSENT or ANY). Raises Displaced, with the old generation back in place, when a file
    no longer holds it; Unwritable, with the old generation in place and no temp left, when
    the file system refuses a write (a full disk, a read-only mount); and FolderMoved, no temp
    left, when `folder`'s path no longer names it at the commit point: every write goes through
    its descriptor, so none lands where a link swapped in at its path leads. A folder moved
    after the commit point holds the generation wherever it went, and is FolderMoved
    (`published`) too: the workspace's path no longer shows it (decision 0487). One whose step a
    save by hand displaced has the steps undone there, as in place, and is FolderMoved unpublished.
    """
    steps: list[Step] = []
    written: list[str] = []  # the temps written so far, the journal's too
    try:
        for name, data in writes.items():
            temp = write_temp_at(folder, name, data)
            written.append(temp)
            steps.append(Step(temp=temp, final=name, before=expected[name], after=digest(data)))
        steps += [
            Step(temp=temp_path_for(folder.path / name).name, final=name, before=expected[name], after=None)
            for name in deletes
        ]
        steps.sort(key=lambda step: step.before == ANY)  # an unchecked replace cannot be undone: last
        faultpoint("memory.workspace.after-temp-files")
        data = Journal(revision=revision, steps=steps).model_dump_json().encode("utf-8")
        written.append(journal := write_temp_at(folder, JOURNAL_NAME, data))
        if not folder.in_place():  # looked at right before the commit point, the rename
            raise FolderMoved(folder.path)
        folder.replace(journal, JOURNAL_NAME)
        folder.sync()
    except FolderMoved:
        _discard_temps(folder, written)  # from the folder they were written in, wherever it is now
        raise
    except OSError as exc:
        if folder.exists(JOURNAL_NAME):
            # In place, though its sync failed: it is the commit point, and the folder's next
            # access rolls it forward from the temps, which must stay.
            raise
        # No journal, so nothing is published: the temps written so far hold the little room a
        # full disk has left, and go now rather than at the folder's next access.
        _discard_temps(folder, written)
        if not folder.in_place():  # removed meanwhile: no write of ours could land
            raise FolderMoved(folder.path) from exc
        raise_as_unwritable(exc, folder.path)
    faultpoint("memory.workspace.after-journal")
    done: list[Step] = []
    try:
        for step in steps:
            _apply(folder, step)
            done.append(step)
            if len(done) == 1:
                faultpoint("memory.workspace.mid-rename")
    except Displaced as displaced:
        moved = not folder.in_place()
        if not moved:
            _roll_back(folder, done)
        elif not _undone(folder, done):
            raise FolderMoved(folder.path, published=True) from displaced
        watch_put_back(displaced)  # after the whole batch is undone: readers never see half of it
        if moved:
            raise FolderMoved(folder.path) from displaced
        raise
    except OSError as exc:
        # A step the file system refused (a new name needing a block of a full folder) is undone
        # with the steps before it, as a displaced file is. Any other error, a step refused
        # halfway (an exchange whose check then failed) or an undo that fails too leaves the
        # journal, and the folder's next access brings the generation forward as after a crash.
        if not folder.in_place():
            # Moved or removed: the journal stays in the folder wherever it went (its next access
            # there brings the generation forward, as after a crash); the path's is a fresh folder's.
            raise FolderMoved(folder.path, published=True) from exc
        if not is_refused_write(exc) or not _untouched(folder, steps[len(done)]):
            raise
        _roll_back(folder, done)
        raise Unwritable(exc, folder.path) from exc
    faultpoint("memory.workspace.before-journal-removal")
    _finish(folder)
    if not folder.in_place():  # moved (not removed) since the commit point: published elsewhere
        raise FolderMoved(folder.path, published=True)


def _undone(folder: HeldFolder, done: list[Step]) -> bool:
    """Whether the steps `done` were undone in `folder`, which a save by hand displaced a step of
    after it was moved away: undone through its descriptor, wherever it went, so the folder holds
    the old generation and the save, no journal. False when it was removed meanwhile (its files
    went with it) or an undo failed there: its journal then stays with it."""
    try:
        if os.fstat(folder.fd).st_nlink == 0:  # removed: no undo has a place
            return False
        _roll_back(folder, done)
    except OSError:
        return False
    return True


def _discard_temps(folder: HeldFolder, temps: list[str]) -> None:
    """Remove the temps a commit wrote before its commit point."""
    with contextlib.suppress(FileNotFoundError):  # a folder removed meanwhile took them along
        for temp in temps:
            folder.unlink(temp, missing_ok=True)
        if temps:
            folder.sync()


def _untouched(folder: HeldFolder, step: Step) -> bool:
    """Whether `step` left its files as they were: a write's new bytes only at its temp, a
    deletion's file still at its name and nothing at its temp."""
    if step.after is None:
        return folder.exists(step.final) and not folder.exists(step.temp)
    return digest_at(folder, step.temp) == step.after and digest_at(folder, step.final) != step.after


def needs_recovery(names: list[str]) -> bool:
    """Whether a folder listing shows an interrupted generation (journal or stray temps)."""
    return any(name == JOURNAL_NAME or is_temp_name(name) for name in names)


def recover(folder: HeldFolder) -> bool:
    """Finish or discard an interrupted generation; True when a journal was rolled forward."""
    journal_path = folder.path / JOURNAL_NAME
    try:
        # Never through a link, nor waiting on a FIFO for a writer (the caller holds the
        # workspace's lock): either, like one past the cap, is unreadable.
        raw = folder.read_regular(JOURNAL_NAME, MEMORY_FILE_MAX_BYTES)
    except FileNotFoundError:
        _remove_temps(folder)
        return False
    except OSError as exc:
        raise JournalUnreadable(journal_path) from exc
    if raw is None:
        raise JournalUnreadable(journal_path)
    try:
        journal = Journal.model_validate_json(raw)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise JournalUnreadable(journal_path) from exc
    for step in journal.steps:
        _settle(folder, _holdable(folder, step))
    _finish(folder)
    return True


def _holdable(folder: HeldFolder, step: Step) -> Step:
    """`step`, with a fresh temp if the folder cannot hold the name it gives.

    Earlier versions named a temp after its file whole, so a journal they left for a file with a
    long name can name a temp no file system allows. No file has that name (a deletion moves the
    file there only now; a write's temp could not be written): any fresh temp serves, where
    replaying the name as given would fail on every read of the workspace.
    """
    if fits(step.temp, folder.path):
        return step
    return step.model_copy(update={"temp": temp_path_for(folder.path / step.final).name})


def _apply(folder: HeldFolder, step: Step) -> None:
    # Unsynced: while the journal is on disk, a step a power cut undoes is replayed; `_finish`
    # syncs the folder once, before the journal goes.
    if step.after is None:
        swap_out(folder, step.final, step.temp, step.before, durable=False)
    else:
        swap_in(folder, step.temp, step.final, step.before, ours=step.after, durable=False)


def _roll_back(folder: HeldFolder, done: list[Step]) -> None:
    for step in reversed(done):
        if step.after is None:
            put_back(folder, step.temp, step.final)
        elif step.before == ABSENT:
            _take_back(folder, step.final, step.after)
        else:
            swap_back(folder, step.temp, step.final, step.after)
        faultpoint("memory.workspace.mid-rollback")
    _finish(folder)


def _take_back(folder: HeldFolder, name: str, ours: str) -> None:
    """Undo a step that made `name`: moved aside to a fresh temp (which `_finish` removes)
    only while it holds our bytes. A save by hand over it since (an editor's save of the record it
    just showed) stays as saved, with no old file to put back, and the commit's version goes with
    the commit; moving first, then checking, leaves no instant in which a save is removed.
    """
    # The aside's name records ours, and no bytes compared (EMPTY stands for them): should a crash
    # cut this off with a save there, recovery keeps it beside the name (`remove_stale_temps`).
    aside = temp_path_for(folder.path / name, swap=(ours, EMPTY)).name
    with contextlib.suppress(Displaced):  # saved, or deleted, by hand: `swap_out` put it back
        swap_out(folder, name, aside, ours, durable=False)


def _settle(folder: HeldFolder, step: Step) -> None:
    """Bring one step of a crashed generation forward, keeping whatever was saved by hand."""
    now, spare = digest_at(folder, step.final), digest_at(folder, step.temp)
    checked = step.before not in (ABSENT, ANY)
    if now == step.after:
        # Applied. The spare name holds what the step displaced: a save caught in the instant
        # between the exchange and its check goes back in place.
        if checked and spare not in (None, step.before, step.after):
            if step.after is None:
                put_back(folder, step.temp, step.final)
            else:
                swap_back(folder, step.temp, step.final, step.after)
        return
    if (step.after is None and now is not None) or (step.after is not None and spare == step.after):
        try:
            _apply(folder, step)
        except Displaced:  # saved (made, deleted) by hand since the crash: it stays as saved
            if step.after is not None and digest_at(folder, step.temp) == step.after:
                set_aside(
                    folder, step.temp, step.final
                )  # the journal committed it: no answer said it was not


def _finish(folder: HeldFolder) -> None:
    """Sync the steps, then drop the journal and what the steps displaced (stray temps only
    matter without one); one sync covers both, since a journal a power cut brings back finds
    every step applied and only removes the temps again."""
    folder.sync()
    folder.unlink(JOURNAL_NAME, missing_ok=True)
    if not _remove_temps(folder):  # it syncs the folder when it removed any
        folder.sync()


def _remove_temps(folder: HeldFolder) -> bool:
    """`fsutil.remove_stale_temps` through `folder`; whether it removed any (then it synced it)."""
    return bool(remove_stale_temps(folder.path, dir_fd=folder.fd))
