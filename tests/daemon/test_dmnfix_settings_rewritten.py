"""`remem settings model` on a `settings.yml` whose shape an edit cannot follow rewrites it
whole, as decision 0463 allows, and says so: which shape, where, and that its comments and
layout were not kept (the daemon logs it too), where the comments went without a word. A
section written in braces is followed now: its values set in them, comments kept."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

FOLDED = "# reviews run locally\nconsolidation:\n  provider: ollama\n  model: >-\n    m1\n"
BLOCK = "# reviews run locally\nconsolidation:\n  provider: ollama\n  model: m1  # for now\n"
BRACES = "# reviews run locally\nconsolidation: {provider: ollama, model: m1}  # for now\n"


def _choose(home: Home, through_daemon: bool) -> subprocess.CompletedProcess[str]:
    environment = dict(os.environ)
    if through_daemon:
        environment.pop(NO_DAEMON_ENV, None)
    command = [
        sys.executable,
        "-m",
        "remem.daemon",
        "--home",
        str(home.root),
        "settings",
        "model",
        "--model",
        "m2",
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=environment)


@pytest.mark.parametrize("through_daemon", [True, False], ids=["daemon", "in-process"])
def test_a_settings_file_rewritten_whole_is_said(home: Home, through_daemon: bool) -> None:
    home.settings_file.write_text(FOLDED)
    chosen = _choose(home, through_daemon)
    assert chosen.returncode == 0, chosen.stderr
    assert chosen.stdout == "ollama/m2\n"
    assert chosen.stderr == (
        f"note: {home.settings_file} was rewritten whole, so its comments and layout were not kept: "
        "`consolidation.model` at line 4 is a folded or literal block (`>` or `|`)\n"
    )
    assert "#" not in home.settings_file.read_text()
    if through_daemon:
        logged = DaemonPaths(home).log.read_text()
        assert f"INFO {home.settings_file} rewritten whole, its comments and layout not kept: " in logged


@pytest.mark.parametrize("written", [BLOCK, BRACES], ids=["block", "braces"])
def test_a_settings_file_edited_in_place_says_nothing_more(home: Home, written: str) -> None:
    """A section in braces is edited in place too: its value replaced where it stands."""
    home.settings_file.write_text(written)
    chosen = _choose(home, through_daemon=True)
    assert (chosen.returncode, chosen.stdout, chosen.stderr) == (0, "ollama/m2\n", "")
    assert home.settings_file.read_text() == written.replace("model: m1", "model: m2")


def test_a_key_missing_from_braces_is_added_in_them(home: Home) -> None:
    home.settings_file.write_text("consolidation: {provider: ollama}  # local\n")
    chosen = _choose(home, through_daemon=False)
    assert (chosen.returncode, chosen.stderr) == (0, ""), chosen.stderr
    assert home.settings_file.read_text() == "consolidation: {provider: ollama, model: m2}  # local\n"
