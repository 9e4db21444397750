"""Seed the demo home: its settings (the demo model's route, or the user's) and a workspace's sessions.

The sessions are scripted (`remem.daemon.sessions.scripted`), in DSH's log format, each a scripted
coding conversation: a main session of 4 turns (the one of scripts/demo_model.py, with a
preference and a project fact worth remembering), a fork after its turn 2 that tries another
way, a subagent that finds callers, and a fork whose parent was never written (an orphan).
All are long finished, so they can be consolidated and branched at once.
Consolidation in the demo asks either the scripted demo model at `--demo-model URL`, or the
model of the user's own home (`--route-from`: its `consolidation` and `providers` settings);
keys are never copied (they come from the environment, as remem reads them).
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
from remem.daemon.sessions.scripted import (
    ScriptedTool,
    ScriptedTurn,
    SessionDraft,
    ToolOutput,
    build_scripted_session,
    fork_session,
    subagent_session,
    write_session,
)
from remem.daemon.settings import SettingsError, parse_settings
from scripts import demo_model

FINISHED = 1_600_000_000  # an mtime long past: the sessions are not live

# The side sessions of the demo's conversation, all as a real agent would have written them.
_OTHER_WAY = (
    ScriptedTurn(
        "Before we stream it: what would a background job look like instead?",
        "The endpoint would queue the export, answer 202 with a job id, and a worker would write "
        "the CSV to object storage and email a signed link when it is done.",
    ),
    ScriptedTurn(
        "That needs the mail service in staging, which we don't have yet. Drop it.",
        "Dropped; nothing was changed in this branch.",
    ),
)
_CALLERS = (
    ScriptedTurn(
        "Find every caller of export_csv and report file and line.",
        "Two callers: api/reports/routes.py:41 (the download endpoint) and jobs/nightly.py:18 "
        "(the nightly archive).",
        (
            ScriptedTool(
                "run_command",
                {"command": "grep -rn 'export_csv(' --include=*.py ."},
                ToolOutput(
                    "./api/reports/routes.py:41:    return export_csv(report_id)\n./jobs/nightly.py:18: ..."
                ),
            ),
        ),
    ),
)
_LOST_PARENT = (
    ScriptedTurn("Why does the nightly archive job take four hours?", "It exports every report one by one."),
    ScriptedTurn("Can it run the exports in parallel?", "Yes, with a pool of four workers."),
)
_ORPHAN = (
    ScriptedTurn(
        "Try eight workers instead of four and time it.",
        "With eight workers the archive took 71 minutes, down from 4 hours.",
        (
            ScriptedTool(
                "run_command", {"command": "python -m jobs.nightly --workers 8"}, ToolOutput("done in 71m")
            ),
        ),
    ),
)


@dataclass(frozen=True)
class DemoSessions:
    main: str
    fork: str
    subagent: str
    orphan: str


def seed_sessions(root: Path, cwd: str) -> DemoSessions:
    """Write the demo's sessions of workspace `cwd` under the session root `root`."""
    main = build_scripted_session(demo_model.DEMO_TURNS, seed=2026, cwd=cwd)
    fork = fork_session(main, _OTHER_WAY, seed=2027, after_turn=2)
    subagent = subagent_session(main, _CALLERS, seed=2028, label="find the callers")
    lost_parent = build_scripted_session(_LOST_PARENT, seed=2029, cwd=cwd)  # never written
    orphan = fork_session(lost_parent, _ORPHAN, seed=2030, after_turn=1)
    return DemoSessions(*(_write_finished(root, draft) for draft in (main, fork, subagent, orphan)))


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


def demo_model_route(base_url: str) -> dict[str, Any]:
    """The settings that send consolidation to the scripted demo model at `base_url`."""
    return {
        "consolidation": {"provider": demo_model.PROVIDER, "model": demo_model.MODEL},
        "providers": {demo_model.PROVIDER: {"base_url": base_url, "api_key_env": demo_model.KEY_ENV}},
    }


def seed(
    home: Path,
    session_root: Path,
    project: Path,
    user_settings: Path | None,
    demo_model_url: str | None = None,
) -> DemoSessions:
    """Write the demo home's settings and its workspace's sessions; the demo model wins if given."""
    chosen = demo_settings(session_root, None if demo_model_url else user_settings)
    if demo_model_url:
        chosen.update(demo_model_route(demo_model_url))
    settings = yaml.safe_dump(chosen, sort_keys=False)
    Home(home).ensure_layout().settings_file.write_text(settings, encoding="utf-8")
    return seed_sessions(session_root, str(project))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.seed_demo", description=__doc__)
    parser.add_argument("home", type=Path, help="the demo's REMEM_HOME")
    parser.add_argument("sessions", type=Path, help="the demo's DSH session root")
    parser.add_argument("project", type=Path, help="the demo workspace the sessions worked in")
    parser.add_argument("--route-from", type=Path, help="the user's settings.yml to take the model from")
    parser.add_argument("--demo-model", metavar="URL", help="the scripted demo model's base URL instead")
    args = parser.parse_args(argv)
    sessions = seed(args.home, args.sessions, args.project, args.route_from, args.demo_model)
    print(sessions.main)
    return 0


if __name__ == "__main__":
    sys.exit(main())
