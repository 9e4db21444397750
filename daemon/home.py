"""`REMEM_HOME` resolution and its folder layout, created on demand and user-only."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .fsutil import ensure_private_dir

HOME_ENV = "REMEM_HOME"


@dataclass(frozen=True)
class Home:
    """Where remem keeps everything: memory, its own sessions, state and settings."""

    root: Path

    @classmethod
    def resolve(cls, explicit: str | os.PathLike[str] | None = None) -> Home:
        """`--home` wins, then `$REMEM_HOME` (if not blank), then `~/.remem`; made absolute."""
        chosen = explicit or os.environ.get(HOME_ENV, "").strip() or "~/.remem"
        return cls(Path(os.path.abspath(os.path.expanduser(os.fspath(chosen)))))

    @property
    def memory(self) -> Path:
        return self.root / "memory"

    @property
    def global_file(self) -> Path:
        return self.memory / "GLOBAL.md"

    @property
    def workspaces(self) -> Path:
        return self.memory / "workspaces"

    @property
    def reviews(self) -> Path:
        return self.memory / "reviews"

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def locks(self) -> Path:
        return self.state / "locks"

    @property
    def settings_file(self) -> Path:
        return self.root / "settings.yml"

    @property
    def credentials_file(self) -> Path:
        return self.root / "credentials.yml"

    def ensure_layout(self) -> Home:
        """Create the fixed folders (0700); existing ones are tightened, never loosened."""
        for folder in (
            self.root,
            self.memory,
            self.workspaces,
            self.reviews,
            self.sessions,
            self.state,
            self.locks,
        ):
            ensure_private_dir(folder)
        return self
