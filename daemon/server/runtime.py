"""Where a daemon's lock, status file, log and socket live, and how to read its status.

The socket sits in a short user-only folder (AF_UNIX paths are limited to 107 bytes, and a
home can be deep): `$XDG_RUNTIME_DIR/remem` when the session has a private runtime dir, else
`<tmp>/remem-<uid>`. In a shared temp dir another user can take that name first, so a name that
is not a real directory of ours (a link, someone else's folder) is never used nor touched: the
daemon makes a fresh private folder instead, and clients find it in the status file. The
socket's name is keyed by the home, so daemons of different homes never meet.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
import tempfile
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from pydantic import ValidationError

from ..fsutil import PRIVATE_DIR_MODE, own_private_dir
from ..home import Home
from ..locks import try_file_lock
from ..protocol.rpc import DaemonInfo

log = logging.getLogger("remem.daemon")
POLL_SECONDS = 0.02  # how often a waiting client looks at the lock and the status file again


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

    @cached_property
    def socket(self) -> Path:
        """Where this home's daemon listens (chosen once: a fallback folder is unique)."""
        key = hashlib.sha256(os.fsencode(self.home.root)).hexdigest()[:16]
        return socket_dir() / f"{key}.sock"

    def running(self) -> bool:
        """Whether a daemon holds this home's lock (the kernel drops it when a daemon dies)."""
        held = try_file_lock(self.lock)
        if held is None:
            return True
        held.release()
        return False

    def gone_by(self, deadline: float) -> bool:
        """Wait until no daemon holds this home's lock: whether none did by `deadline` (monotonic)."""
        while self.running():
            if time.monotonic() > deadline:
                return False
            time.sleep(POLL_SECONDS)
        return True

    def read_status(self) -> DaemonInfo | None:
        """The status file's content, or None when it is missing or unreadable (a crash)."""
        try:
            return DaemonInfo.model_validate_json(self.status.read_bytes())
        except (OSError, ValidationError):
            return None


def socket_dir() -> Path:
    """A user-only folder for sockets: the usual one if it is ours, else a fresh private one."""
    for folder in _usual_socket_dirs():
        try:
            folder.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            pass
        except OSError:
            continue
        if own_private_dir(folder):
            return folder
        log.warning("%s is not a folder of this user (a link, or another user's); remove it", folder)
    fresh = Path(tempfile.mkdtemp(prefix=f"{_shared_name()}-"))  # 0700, and a name nobody had
    log.warning("using %s for the socket instead", fresh)
    return fresh


def release_socket(path: Path) -> None:
    """Remove a stopping daemon's socket, and the fresh folder it was given, if any."""
    path.unlink(missing_ok=True)
    if path.parent.name.startswith(f"{_shared_name()}-"):
        with contextlib.suppress(OSError):  # not empty: something else put a file there
            path.parent.rmdir()


def _usual_socket_dirs() -> list[Path]:
    folders = [Path(tempfile.gettempdir()) / _shared_name()]
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    # The spec requires it to be the user's own and 0700; one that is not is ignored, not fixed.
    if os.path.isabs(runtime) and _private_as_is(Path(runtime)):
        folders.insert(0, Path(runtime) / "remem")
    return folders


def _private_as_is(folder: Path) -> bool:
    try:
        st = os.stat(folder, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def _shared_name() -> str:
    return f"remem-{os.getuid()}"
