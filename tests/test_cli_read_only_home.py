"""Reading settings makes none of the home's folders; only a write of them does (decision 0487).
`remem eval` reads the user's settings and runs every case in a home of its own: a fresh or
missing REMEM_HOME is left as it was found."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from remem.daemon.home import Home

UNKNOWN_PROVIDER = ("eval", "--provider", "no-such-provider")  # refused once settings are read


def remem(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def left_in(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


def test_eval_leaves_an_empty_home_empty(home: Home) -> None:
    home.root.mkdir(mode=0o700)
    done = remem(home, *UNKNOWN_PROVIDER)
    assert done.returncode == 2
    assert "--provider no-such-provider is not a provider of your settings" in done.stderr
    assert left_in(home.root) == []


def test_eval_makes_no_home(home: Home) -> None:
    done = remem(home, *UNKNOWN_PROVIDER)
    assert done.returncode == 2, done.stderr
    assert not home.root.exists()


def test_eval_of_an_invalid_settings_file_leaves_only_that_file(home: Home) -> None:
    home.root.mkdir(mode=0o700)
    home.settings_file.write_text("consolidation:\n  max_tokens: -1\n")
    done = remem(home, "eval")
    assert done.returncode == 2
    assert "consolidation.max_tokens" in done.stderr
    assert left_in(home.root) == ["settings.yml"]


def test_a_choice_of_model_on_a_home_never_made_makes_it(home: Home) -> None:
    done = remem(home, "settings", "model", "--provider", "openai", "--model", "gpt-4o")
    assert done.returncode == 0, done.stderr
    assert "model: gpt-4o" in home.settings_file.read_text()
    assert (home.locks / "settings.lock").exists()
