"""Atomic workspace generations through a redo journal, and their crash recovery.

Protocol: every new file is written to a synced temp file; then the journal naming them is
published atomically (the commit point); then the temps are renamed over their final names,
which keeps record paths stable for editors; then the journal is removed. Recovery rolls a
present journal forward (renames and deletes are idempotent) and otherwise discards temps, so a
crash at any instant leaves exactly the old or exactly the new generation.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator

from ..faults import faultpoint
from ..fsutil import atomic_write, fsync_dir, is_temp_name, remove_stale_temps, write_temp

JOURNAL_NAME = ".remem-journal.json"


class Journal(BaseModel):
    model_config = ConfigDict(extra="forbid")
    revision: str
    renames: list[tuple[str, str]]
    deletes: list[str]

    # A journal is replayed blindly during recovery: it may only name files in its folder.
    @field_validator("renames")
    @classmethod
    def _plain_renames(cls, value: list[tuple[str, str]]) -> list[tuple[str, str]]:
        _require_plain([name for pair in value for name in pair])
        return value

    @field_validator("deletes")
    @classmethod
    def _plain_deletes(cls, value: list[str]) -> list[str]:
        _require_plain(value)
        return value


def _require_plain(names: list[str]) -> None:
    if any("/" in name or name in ("", ".", "..") for name in names):
        raise ValueError("journal entries must be plain file names")


def write_generation(folder: Path, revision: str, writes: dict[str, bytes], deletes: list[str]) -> None:
    """Publish one generation in `folder`; the caller holds the scope's exclusive lock."""
    renames = [(write_temp(folder / name, data).name, name) for name, data in writes.items()]
    faultpoint("memory.workspace.after-temp-files")
    journal = Journal(revision=revision, renames=renames, deletes=deletes)
    atomic_write(folder / JOURNAL_NAME, journal.model_dump_json().encode("utf-8"))
    faultpoint("memory.workspace.after-journal")
    _roll_forward(folder, journal)
    faultpoint("memory.workspace.before-journal-removal")
    _remove_journal(folder)


def needs_recovery(names: list[str]) -> bool:
    """Whether a folder listing shows an interrupted generation (journal or stray temps)."""
    return any(name == JOURNAL_NAME or is_temp_name(name) for name in names)


def recover(folder: Path) -> bool:
    """Finish or discard an interrupted generation; True when a journal was rolled forward."""
    journal_path = folder / JOURNAL_NAME
    try:
        journal = Journal.model_validate_json(journal_path.read_bytes())
    except FileNotFoundError:
        remove_stale_temps(folder)
        return False
    _roll_forward(folder, journal)
    _remove_journal(folder)
    remove_stale_temps(folder)
    return True


def _roll_forward(folder: Path, journal: Journal) -> None:
    for number, (temp, final) in enumerate(journal.renames):
        # A missing temp was renamed before a crash: its final file already holds the new content.
        with contextlib.suppress(FileNotFoundError):
            os.replace(folder / temp, folder / final)
        if number == 0:
            faultpoint("memory.workspace.mid-rename")
    for name in journal.deletes:
        (folder / name).unlink(missing_ok=True)
    fsync_dir(folder)


def _remove_journal(folder: Path) -> None:
    (folder / JOURNAL_NAME).unlink()
    fsync_dir(folder)
