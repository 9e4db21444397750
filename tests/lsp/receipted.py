"""A home whose workspace memory a real consolidation wrote, for provenance, lenses and hovers.

A generated session is reviewed by `remem consolidate` (in its own process, without a daemon)
against the fake model server, which proposes one record from the session's first two turns.
The home's settings name the session root, so the daemon the language server starts finds the
session too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.sessions.projection import Projection
from remem.daemon.sessions.reader import read_session
from tests.consolidation.conftest import KEY_ENV, configure, proposal, put, write_source
from tests.fake_openai import FakeOpenAI, tool_call
from tests.lsp.editor import refusing_daemon
from tests.scratch import process_folder

NAME = "prefer-uv"
DESCRIPTION = f"About {NAME}"  # what `put` proposes
SAFETY_NET = "daemon:\n  idle_minutes: 2\n"  # the tests stop the daemon; this stops a stray one


@dataclass(frozen=True)
class Receipted:
    home: Home
    root: Path  # the session root
    cwd: str
    session: str
    log: Path
    title: str
    review: str

    @property
    def folder(self) -> Path:
        return self.home.workspaces / WorkspaceId.from_cwd(self.cwd).key

    @property
    def record(self) -> Path:
        return self.folder / f"{NAME}.md"

    @property
    def command(self) -> list[str]:
        return [sys.executable, "-m", "remem.daemon", "--home", str(self.home.root)]


def new_home(prefix: str) -> Home:
    return Home(process_folder(prefix) / "home")


def consolidated(home: Home) -> Receipted:
    """`home` with one committed review that put the record `prefer-uv`."""
    root, cwd = home.root.parent / "dsh-sessions", str(home.root.parent / "project")
    with FakeOpenAI(api_key="sk-test") as fake:
        configure(home, fake, root, timeout_seconds=20)
        with home.settings_file.open("a") as settings:
            settings.write(SAFETY_NET)
        source = write_source(root, cwd, turns=3)
        fake.reply(tool_call(proposal(put(NAME, [r.model_dump() for r in source.ranges[:2]]))))
        done = subprocess.run(
            [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon"]
            + ["consolidate", source.id, "--json"],
            env={**os.environ, KEY_ENV: "sk-test", "DSH_HOME": str(home.root.parent / "no-dsh-home")},
            capture_output=True,
            text=True,
            timeout=120,
        )
    result = json.loads(done.stdout)
    assert result["status"] == "committed", done.stderr
    title = Projection().fold(read_session(source.path).events).title
    assert title is not None
    return Receipted(home, root, cwd, source.id, source.path, title, result["review"])


def without_daemon(receipted: Receipted, home: Home) -> Home:
    """A copy of the receipted memory in a home whose daemon refuses to start."""
    shutil.copytree(receipted.home.memory, home.memory)
    return refusing_daemon(home)
