"""remem's own session metadata: display titles and archive state, never written into any log.

Each session's entry carries a generation; every change is a compare-and-swap on it
(`STALE_GENERATION` when another client changed the session first). DSH's own archive list
(`$DSH_HOME/storages/workspace.json`) is honoured read-only; an explicit archive or restore
in remem takes precedence over it.

Both files are opened never waiting on a FIFO (`safe_open`): one put there would hold every
listing, and a daemon thread each time, for good. remem's own file is never read through a
link; DSH's is, as its owner may keep it in a dotfiles repository.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ..fsutil import atomic_rewrite, is_refused_write, remedy
from ..home import Home
from ..limits import MIB, size_text
from ..locks import file_lock
from ..protocol.sessions import SessionMeta
from ..safe_open import open_linked, read_capped, read_regular, refused, standing_at
from .errors import OperationError
from .sources import HARNESS_HOMES

# Bounds what a listing holds in memory for either file. An entry of session-meta.json takes
# about 100 bytes: the cap is far above any real file, yet no runaway one is read whole.
META_MAX_BYTES = 64 * MIB
DSH_REGISTRY_MAX_BYTES = 64 * MIB


class _MetaFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sessions: dict[str, SessionMeta] = Field(default_factory=dict)


class SessionMetadata:
    def __init__(self, home: Home) -> None:
        self.path = home.state / "session-meta.json"
        self.lock = home.locks / "session-meta.lock"

    def get(self, session_id: str) -> SessionMeta:
        return self.all().get(session_id, SessionMeta())

    def all(self) -> dict[str, SessionMeta]:
        return self.read()[0]

    def read(self) -> tuple[dict[str, SessionMeta], str | None]:
        """Every session's metadata, and why the file is unusable: then none, and sessions still
        list (with the titles and archive states of their logs)."""
        try:
            return self._load().sessions, None
        except OperationError as exc:
            return {}, exc.message

    def display_title(self, session_id: str, log_title: str | None) -> str | None:
        return self.get(session_id).title or log_title

    def update(self, session_id: str, expected_generation: int | None, **changes: object) -> SessionMeta:
        """Apply `changes` (title, archived) if the session is still at `expected_generation`."""
        with file_lock(self.lock):
            data = self._load()
            current = data.sessions.get(session_id, SessionMeta())
            if expected_generation is not None and expected_generation != current.generation:
                raise OperationError(
                    "STALE_GENERATION",
                    f"session {session_id!r} metadata is at generation {current.generation}, "
                    f"not {expected_generation}; re-read it and retry",
                )
            updated = current.model_copy(update={**changes, "generation": current.generation + 1})
            data.sessions[session_id] = updated
            try:
                raw = data.model_dump_json(indent=2).encode() + b"\n"
                atomic_rewrite(self.path, raw, written="sessions.metadata.after-temp-write")
            except OSError as exc:
                if not is_refused_write(exc):
                    raise
                raise OperationError(
                    "UNWRITABLE",
                    f"{self.path} could not be written ({exc.strerror}), so the session's title "
                    f"and archive state are as they were; to go on, {remedy(exc.errno)}, then retry",
                ) from None
            return updated

    def _load(self) -> _MetaFile:
        """The file's content; an unusable file is refused, never overwritten (it holds every
        title and archive state set in remem). Anything but a regular file there (a FIFO, a
        link) is unusable too, said by what it is."""
        try:
            raw = read_regular(self.path, META_MAX_BYTES)
        except FileNotFoundError:
            return _MetaFile()
        except OSError as exc:
            raise self._unusable(
                standing_at(self.path) if refused(exc) else exc.strerror or str(exc)
            ) from None
        if raw is None:
            raise self._unusable(f"over {size_text(META_MAX_BYTES)}")
        try:
            return _MetaFile.model_validate_json(raw)
        except ValueError:  # pydantic's ValidationError is a ValueError
            raise self._unusable("not valid session metadata") from None

    def _unusable(self, reason: str) -> OperationError:
        return OperationError(
            "INVALID",
            f"{self.path} cannot be read ({reason}): the titles and archive states set in remem "
            "are not shown, and none can be changed until it is fixed or deleted (deleting it "
            "forgets them)",
        )


def dsh_registry() -> Path:
    """DSH's web workspace registry, which holds its archive list."""
    return HARNESS_HOMES["dsh"].path() / "storages" / "workspace.json"


def dsh_archived() -> frozenset[str]:
    """Session ids DSH's web workspace registry archived; empty when it has none, is unreadable
    or is of a shape this reading does not know (DSH's file: read, never judged)."""
    try:
        with os.fdopen(open_linked(dsh_registry()), "rb") as handle:
            raw = read_capped(handle, DSH_REGISTRY_MAX_BYTES)
        if raw is None:  # a runaway file: unreadable here, as any other
            return frozenset()
        ids = json.loads(raw).get("global", {}).get("archivedSessionIds", [])
    except (OSError, ValueError, AttributeError):
        return frozenset()
    return frozenset(i for i in ids if isinstance(i, str)) if isinstance(ids, list) else frozenset()
