"""Where a daemon's lock, status file, log and socket live, and how to read its status.

The socket sits in a short user-only folder under the system temp dir (AF_UNIX paths are
limited to 107 bytes, and a home can be deep); its name is keyed by the home, so daemons of
different homes never meet.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ..fsutil import ensure_private_dir
from ..home import Home
from ..locks import try_file_lock
from .protocol import DaemonInfo


@dataclass(frozen=True)
class DaemonPaths:
    home: Home

    def __post_init__(self) -> None:
        self.home.ensure_layout()

    @property
    def lock(self) -> Path:
        return self.home.state / "daemon.lock"

    @property
    def status(self) -> Path:
        return self.home.state / "daemon.json"

    @property
    def spawn_lock(self) -> Path:
        return self.home.state / "spawn.lock"

    @property
    def log(self) -> Path:
        return self.home.state / "daemon.log"

    @property
    def socket(self) -> Path:
        key = hashlib.sha256(os.fsencode(self.home.root)).hexdigest()[:16]
        return socket_dir() / f"{key}.sock"

    def running(self) -> bool:
        """Whether a daemon holds this home's lock (the kernel drops it when a daemon dies)."""
        held = try_file_lock(self.lock)
        if held is None:
            return True
        held.release()
        return False

    def read_status(self) -> DaemonInfo | None:
        """The status file's content, or None when it is missing or unreadable (a crash)."""
        try:
            return DaemonInfo.model_validate_json(self.status.read_bytes())
        except (OSError, ValidationError):
            return None


def socket_dir() -> Path:
    """A user-only folder for sockets; refuses one that another user owns or opened up."""
    folder = Path(tempfile.gettempdir()) / f"remem-{os.getuid()}"
    ensure_private_dir(folder)
    st = os.stat(folder, follow_symlinks=False)
    if st.st_uid != os.getuid() or not os.path.isdir(folder) or os.path.islink(folder):
        raise PermissionError(f"{folder} is not a private folder of this user; remove it and retry")
    return folder
