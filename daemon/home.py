"""`REMEM_HOME` resolution and its folder layout, created on demand and user-only."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .fsutil import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, own_private_dir

HOME_ENV = "REMEM_HOME"


class HomeUnusable(Exception):
    """A folder of the home cannot be made: a file stands where it must be, or it is not ours."""


@dataclass(frozen=True)
class Home:
    """Where remem keeps everything: memory, its own sessions, state and settings.

    The paths are computed once per home: the language server compares them on every keystroke.
    """

    root: Path

    @classmethod
    def resolve(cls, explicit: str | os.PathLike[str] | None = None) -> Home:
        """`--home` wins, then `$REMEM_HOME` (if not blank), then `~/.remem`; made absolute."""
        chosen = explicit or os.environ.get(HOME_ENV, "").strip() or "~/.remem"
        return cls(Path(os.path.abspath(os.path.expanduser(os.fspath(chosen)))))

    @cached_property
    def memory(self) -> Path:
        return self.root / "memory"

    @cached_property
    def global_file(self) -> Path:
        return self.memory / "GLOBAL.md"

    @cached_property
    def workspaces(self) -> Path:
        return self.memory / "workspaces"

    @cached_property
    def reviews(self) -> Path:
        return self.memory / "reviews"

    @cached_property
    def debug(self) -> Path:
        return self.memory / "debug"

    @cached_property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @cached_property
    def state(self) -> Path:
        return self.root / "state"

    @cached_property
    def locks(self) -> Path:
        return self.state / "locks"

    @cached_property
    def settings_file(self) -> Path:
        return self.root / "settings.yml"

    @cached_property
    def credentials_file(self) -> Path:
        return self.root / "credentials.yml"

    def ensure_layout(self) -> Home:
        """Create the fixed folders (0700); existing ones, and a hand-made `settings.yml`, are
        tightened to user-only, never loosened."""
        for folder in (
            self.root,
            self.memory,
            self.workspaces,
            self.reviews,
            self.sessions,
            self.state,
            self.locks,
        ):
            try:
                folder.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
            except OSError as exc:
                raise HomeUnusable(
                    f"remem's home {self.root} cannot be used: {folder} cannot be made a folder "
                    f"({exc.strerror or exc}); move what is in the way, or choose another home with "
                    f"--home or ${HOME_ENV}"
                ) from None
            # Looked at only when the folder is not plainly ours (`own_private_dir` opens none
            # through a link); the home itself may be a link, the user's choice.
            if not own_private_dir(folder) and folder != self.root and folder.is_symlink():
                raise HomeUnusable(
                    f"remem's home {self.root} cannot be used: {folder} is a symbolic link, and remem "
                    "reads and writes only inside its home; move the folder it points to into the "
                    f"home, or choose a home that holds it with --home or ${HOME_ENV}"
                )
        _tighten(self.settings_file)
        return self


def _tighten(path: Path) -> None:
    """Make a file of ours user-only; one owned by someone else is left alone, as for folders."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return
    if st.st_mode & 0o077 and st.st_uid == os.getuid():
        os.chmod(path, PRIVATE_FILE_MODE)
