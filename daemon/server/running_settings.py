"""The settings a running daemon uses: `settings.yml` while it is valid, else the last valid.

A hand edit that breaks `settings.yml` must not stop the daemon (and with it the editor and
every agent): the daemon starts on the last settings it found valid (`state/settings.valid.json`,
or the defaults when there never were any) and reports each problem, by key and line, in
`daemon/status` until the file is fixed.
"""

from __future__ import annotations

import logging
from pathlib import Path

from pydantic import ValidationError

from ..fsutil import atomic_write
from ..home import Home
from ..settings import Settings, SettingsError, SettingsStore

log = logging.getLogger("remem.daemon")


class RunningSettings:
    def __init__(self, home: Home) -> None:
        self.home = home
        self.current = self._last_valid()  # until settings.yml proves valid
        self.problems: list[str] = []
        self.reload()

    def reload(self) -> bool:
        """Read `settings.yml` again; False (keeping the current settings) when it is invalid."""
        try:
            settings, _ = SettingsStore(self.home).read()
        except SettingsError as exc:
            self.problems = exc.problems
            log.warning("settings.yml is invalid; running on the last valid settings: %s", exc)
            return False
        self.current, self.problems = settings, []
        atomic_write(self._copy, settings.model_dump_json(exclude_unset=True).encode() + b"\n")
        return True

    @property
    def _copy(self) -> Path:
        return self.home.state / "settings.valid.json"

    def _last_valid(self) -> Settings:
        try:
            return Settings.model_validate_json(self._copy.read_bytes())
        except (OSError, ValidationError):
            return Settings()
