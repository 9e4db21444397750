"""What settings.yml holds reaches the daemon's log escaped, one line per warning: a value of
the file can neither forge a line of the log nor write a raw control character into it."""

from __future__ import annotations

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.settings import SettingsError, parse_settings

from .helpers import calls, remem

FORGED = "2026-12-06 04:00:00,000 ERROR FORGED LOG LINE"


def test_settings_values_are_logged_escaped_on_one_line(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    home.ensure_layout()
    home.settings_file.write_text(
        f'sessions:\n  roots: ["rel\\n{FORGED}", "\\x00bad"]\n"evil\\u2028{FORGED}": 1\n'
    )
    listed = remem(home, "sessions", "list")  # starts the daemon, which reads the file
    [status] = calls(home, [("daemon/status", {})])
    remem(home, "daemon", "stop")
    assert listed.returncode == 2 and FORGED in listed.stderr
    log = (home.state / "daemon.log").read_bytes()
    assert b"\x00" not in log and "\u2028".encode() not in log
    lines = log.decode().splitlines()
    assert not [line for line in lines if line.startswith(FORGED)], lines
    [warning] = [line for line in lines if "settings.yml is invalid" in line]
    assert f"'rel\\n{FORGED}' is a relative path" in warning and f"(/…/rel\\n{FORGED})" in warning
    assert "'\\x00bad' holds a NUL character" in warning and f"evil\\u2028{FORGED}: unknown key" in warning
    problems = status["settingsProblems"]
    assert len(problems) == 3 and all("\n" not in p and "\x00" not in p for p in problems), problems


def test_an_undefined_providers_name_is_said_on_one_line() -> None:
    with pytest.raises(SettingsError) as raised:
        parse_settings(b'consolidation:\n  provider: "x\\ny"\n"a\\nb": 1\nb: 2\n"a\\nb": 3\n')
    assert raised.value.problems == ["settings.yml:5: a\\nb: appears twice; keep one"]
    with pytest.raises(SettingsError) as raised:
        parse_settings(b'consolidation:\n  provider: "x\\ny"\n')
    [problem] = raised.value.problems
    assert problem.startswith("settings.yml:2: consolidation.provider: `x\\ny` is not defined; use one of ")
