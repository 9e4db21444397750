"""Seed the demo home: its settings (with the user's own model route) and a workspace's sessions.

The sessions come from the project's session factory, in DSH's log format: a main session of
4 turns, a fork after its turn 2, a subagent, and a fork whose parent was never written (an
orphan). All are long finished, so they can be consolidated and branched at once. The demo home
copies the `consolidation` and `providers` settings of the user's own home, so consolidation
in the demo asks the model the user configured; keys are never copied (they come from the
environment, as remem reads them).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from remem.daemon.home import Home
from remem.daemon.sessions.factory import (
    SessionDraft,
    SessionSpec,
    build_family,
    build_session,
    fork_session,
    write_session,
)
from remem.daemon.settings import SettingsError, parse_settings

FINISHED = 1_600_000_000  # an mtime long past: the sessions are not live


@dataclass(frozen=True)
class DemoSessions:
    main: str
    fork: str
    subagent: str
    orphan: str


def seed_sessions(root: Path, cwd: str) -> DemoSessions:
    """Write the demo's sessions of workspace `cwd` under the session root `root`."""
    family = build_family(2026, turns=4, cwd=cwd)
    lost_parent = build_session(SessionSpec(seed=2029, turns=3, cwd=cwd))  # never written
    orphan = fork_session(lost_parent, SessionSpec(seed=2030, turns=1, cwd=cwd), after_turn=1)
    return DemoSessions(*(_write_finished(root, draft) for draft in (*family.drafts, orphan)))


def _write_finished(root: Path, draft: SessionDraft) -> str:
    path = write_session(root, draft)
    os.utime(path, (FINISHED, FINISHED))
    return str(draft.header.id)


def demo_settings(session_root: Path, user_settings: Path | None) -> dict[str, Any]:
    """The demo home's settings: its session root and the user's consolidation route, if usable."""
    settings: dict[str, Any] = {"sessions": {"roots": [str(session_root)]}}
    if user_settings is None or not user_settings.is_file():
        return settings
    try:
        theirs = parse_settings(user_settings.read_bytes(), str(user_settings))
    except (OSError, SettingsError) as exc:
        print(f"The demo uses remem's default model: {exc}", file=sys.stderr)
        return settings
    chosen = theirs.model_dump(exclude_unset=True, include={"consolidation", "providers"})
    return {**settings, **chosen}


def seed(home: Path, session_root: Path, project: Path, user_settings: Path | None) -> DemoSessions:
    settings = yaml.safe_dump(demo_settings(session_root, user_settings), sort_keys=False)
    Home(home).ensure_layout().settings_file.write_text(settings, encoding="utf-8")
    return seed_sessions(session_root, str(project))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.seed_demo", description=__doc__)
    parser.add_argument("home", type=Path, help="the demo's REMEM_HOME")
    parser.add_argument("sessions", type=Path, help="the demo's DSH session root")
    parser.add_argument("project", type=Path, help="the demo workspace the sessions worked in")
    parser.add_argument("--route-from", type=Path, help="the user's settings.yml to take the model from")
    args = parser.parse_args(argv)
    sessions = seed(args.home, args.sessions, args.project, args.route_from)
    print(sessions.main)
    return 0


if __name__ == "__main__":
    sys.exit(main())
