"""`remem eval` as the tests run it: its command line in a process of its own, and the environment
with the fake provider's key (or none)."""

from __future__ import annotations

import os
import subprocess
import sys

from remem.daemon.home import Home

from .conftest import KEY_ENV


def eval_command(home: Home, *args: str) -> list[str]:
    return [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon", "eval", *args]


def eval_env(key: str | None = "sk-test", **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    env.update({KEY_ENV: key} if key else {})
    return env | more


def remem(home: Home, *args: str, key: str | None = "sk-test") -> subprocess.CompletedProcess[str]:
    """`remem eval ARGS` run to its end, with `key` as the fake provider's (None: no key)."""
    return subprocess.run(
        eval_command(home, *args), env=eval_env(key), capture_output=True, text=True, timeout=120
    )
