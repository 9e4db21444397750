"""A background settle (after a memory folder changed) that meets something in the home in its
way says it in one warning line naming what to fix, as a request is answered; it was logged as
an error with a traceback, as if remem had a bug."""

from __future__ import annotations

import shutil

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

from .helpers import remem, wait_until

SAID = "WARNING settling the reviews a crash left committing: remem's home "


def test_a_file_at_the_reviews_folder_is_one_warning_line_at_the_background_settle(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    assert remem(home, "daemon", "start").returncode == 0
    paths = DaemonPaths(home)
    shutil.rmtree(home.reviews)
    home.reviews.write_text("not a folder\n")  # a change in the memory folder: a settle follows
    wait_until(lambda: "settling the reviews a crash left committing" in paths.log.read_text())
    assert remem(home, "daemon", "stop").returncode == 0
    logged = paths.log.read_text()
    [said] = [line for line in logged.splitlines() if "settling the reviews" in line]
    assert SAID in said, said
    assert f"{home.reviews} cannot be made a folder (File exists); move what is in the way" in said
    assert "Traceback" not in logged and " ERROR " not in logged, logged
