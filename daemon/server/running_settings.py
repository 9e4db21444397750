"""The settings a running daemon uses: `settings.yml` while it is valid, else the last valid.

A hand edit that breaks `settings.yml` must not stop the daemon (and with it the editor and
every agent): the daemon starts on the last settings it found valid (`state/settings.valid.json`,
or the defaults when there never were any) and reports each problem, by key and line, in
`daemon/status` until the file is fixed. Session requests also carry the problems in their
answers (`now`), so the CLI refuses as it does without the daemon and the editor says why
its tree may be out of date.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from pydantic import ValidationError

from ..fsutil import atomic_write, remove_stale_temps_of
from ..home import Home
from ..safe_open import read_regular
from ..safe_yaml import MAX_BYTES
from ..settings import Settings, SettingsError, SettingsStore, parse_settings, read_settings_file
from ..validation import one_line

log = logging.getLogger("remem.daemon")


class RunningSettings:
    def __init__(self, home: Home) -> None:
        self.home = home
        # Reloads may write the copy from two threads at once, each through its own temp: the
        # temps a crash left are removed here, before any reload, the daemon's home lock held.
        # One that cannot be is one hidden file more, no reason to refuse to start.
        with contextlib.suppress(OSError):
            remove_stale_temps_of(self._copy)
        self.current = self._last_valid()  # until settings.yml proves valid
        self.problems: list[str] = []
        self.reload()

    def reload(self) -> bool:
        """Read `settings.yml` again; False (keeping the current settings) when it is invalid."""
        try:
            settings, _ = SettingsStore(self.home).read()
        except SettingsError as exc:
            self.problems = exc.problems
            said = one_line("; ".join(exc.problems))  # one log line, whatever the file holds
            log.warning("settings.yml is invalid; running on the last valid settings: %s", said)
            return False
        self.current, self.problems = settings, []
        try:
            copied = settings.model_dump_json(exclude_unset=True).encode() + b"\n"
            atomic_write(self._copy, copied, written="settings.valid-copy.after-temp-write")
        except OSError as exc:  # a full disk: the copy only matters once settings.yml breaks
            log.warning(
                "the valid settings could not be kept in %s (%s); should settings.yml become "
                "invalid, a daemon started then runs on the last copy kept, or the defaults",
                self._copy,
                exc.strerror or type(exc).__name__,
            )
        return True

    def now(self) -> tuple[Settings, list[str]]:
        """What a request runs on: `settings.yml` as it is now when it is valid; else the
        current settings, with the file's problems, which the answer carries (decision 0363).
        Read at each request, as a command without the daemon reads it, so the two answer
        alike even before the watcher's `reload` heard of the edit."""
        path = self.home.settings_file
        try:
            # Not through `SettingsStore`, which makes the home's folders first: the request's
            # catalog does that, and twice cost a warm listing a quarter of a millisecond.
            raw = read_settings_file(path) or b""
            return parse_settings(raw, str(path)), []
        except SettingsError as exc:  # invalid, or no regular file there (a folder, a FIFO)
            return self.current, exc.problems

    def unheard(self, settings: Settings, problems: list[str]) -> bool:
        """Whether `now()`'s answer is news `reload` has not taken up: an edit no watch saw."""
        return problems != self.problems or (settings is not self.current and settings != self.current)

    @property
    def _copy(self) -> Path:
        return self.home.state / "settings.valid.json"

    def _last_valid(self) -> Settings:
        """The settings last found valid; the defaults when there are none to read. The copy is
        opened as `safe_open.open_regular` opens it: a FIFO put there would hold the daemon's
        start for good. It is bounded as the `settings.yml` it copies is parsed."""
        try:
            raw = read_regular(self._copy, MAX_BYTES)
            return Settings() if raw is None else Settings.model_validate_json(raw)
        except (OSError, ValidationError):
            return Settings()
