"""The fork wire types: what `sessions/fork` is asked, and what it answers."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, Field, model_validator

from .memory import STRICT

# A session's revision: its file's as a listing takes it (`stat_revision`: dev:ino:size:mtime:
# ctime), with `LIVE_MARK` after it for turns (or a transcript) read while a Claude Code session
# was live. Its last turn then ends at its answer, once the session is quiet past its calls
# (decision 0535), so a fork checks the turns were read as they are now (decision 0544).
LIVE_MARK = ":live"
SESSION_REVISION = rf"^\d+:\d+:\d+:\d+:\d+(?:{LIVE_MARK})?$"


class ForkRequest(BaseModel):
    model_config = STRICT  # `"atSeq": "5"` is refused, not 5
    source: str
    operationId: str
    atSeq: int | None = None
    # Instead of `atSeq`: after this turn, as `sessions turns` numbers them. The daemon finds
    # its end after the operation's journal, so a retry is the same request whatever became of
    # the session since, and another one is refused before the session is read (0393).
    afterTurn: int | None = Field(default=None, ge=1)
    title: str | None = None
    expectedRevision: str | None = Field(default=None, pattern=SESSION_REVISION)

    @model_validator(mode="after")
    def _one_anchor(self) -> ForkRequest:
        if self.atSeq is not None and self.afterTurn is not None:
            raise ValueError("atSeq and afterTurn both name where to branch: give one of them")
        return self

    def digest(self) -> str:
        # Without an unset `afterTurn`: a request journalled before it existed keeps its digest.
        unset = set() if self.afterTurn is not None else {"afterTurn"}
        fields = self.model_dump(exclude={"operationId", *unset})
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


class ForkResult(BaseModel):
    """What `remem sessions fork --json` prints."""

    child: str
    seedLength: int
    forkTurn: int
    created: bool
    # The command that continues the child in its harness (Claude Code, Codex), run from the
    # session's cwd; DSH children are opened from DSH's own session list.
    resume: list[str] | None = None
    # Where and how `resume` finds the child (Claude Code, Codex): the session's cwd, the
    # variables the harness needs (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`; none when its default
    # folder holds the child), and all of it as one shell command. No home of the harness
    # holds a child written to a root that is no harness's session folder: then `env` and
    # `command` are None and `note` says where the harness looks instead. Beside a command,
    # `note` says why it would fail now (the session's folder is not there any more).
    cwd: str | None = None
    env: dict[str, str] | None = None
    command: str | None = None
    note: str | None = None


# What only a Claude Code or Codex child has: a DSH fork's JSON leaves these out.
HARNESS_FIELDS = frozenset({"resume", "cwd", "env", "command", "note"})
