"""`remem sessions fork --json` as a user runs it, in this process, and what its refusals are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home

CWD = "/home/dev/projects/demo"


def fork(
    home: Home, *args: str, root: Path | None = None, daemon: bool = False
) -> tuple[int, dict[str, Any]]:
    where = ["--root", str(root)] if root is not None else []
    flags = [] if daemon else ["--no-daemon"]
    done = CliRunner().invoke(
        cli, ["--home", str(home.root), *flags, "sessions", "fork", *args, *where, "--json"]
    )
    if done.exception and not isinstance(done.exception, SystemExit):
        raise done.exception
    return done.exit_code, json.loads(done.stdout)


def conflict(answer: tuple[int, dict[str, Any]]) -> bool:
    code, out = answer
    return code == 3 and out.get("error", {}).get("code") == "OP_CONFLICT"
