"""Seed the demo home: its settings (the demo model's route, or the user's) and a workspace's sessions.

The sessions are scripted coding conversations of the demo workspace, of all three harnesses
remem reads. In DSH's log format (`remem.daemon.sessions.scripted`): a main session of 4 turns
(the one of scripts/demo_model.py, with a preference and a project fact worth remembering), a
fork after its turn 2 that tries another way, a subagent that finds callers, and a fork whose
parent was never written (an orphan). Beside the DSH root, a Claude Code config folder
(`claude/`) and a Codex home (`codex/`) hold a session each (scripts/demo_harnesses.py), which
the settings name as roots. All are long finished, so they can be consolidated and branched at once.
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
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from remem.daemon.home import Home
from remem.daemon.sessions.scripted import (
    ScriptedTool,
    ScriptedTurn,
    ToolOutput,
    build_scripted_session,
    fork_session,
    subagent_session,
    write_session,
)
from remem.daemon.settings import SettingsError, parse_settings
from scripts import demo_model
from scripts.demo_harnesses import derived_id, write_claude_code_session, write_codex_session

FINISHED = 1_600_000_000  # an mtime long past: the sessions are not live
HARNESS_HOMES = {"claude-code": "claude", "codex": "codex"}  # folders beside the DSH root

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

# The same workspace in the other harnesses: a Claude Code session and a Codex one.
_CLAUDE_CODE = (
    ScriptedTurn(
        "Add a test that the export streams its first chunk before the last row is read.",
        "Added `test_export_streams_before_the_last_row` to tests/test_export.py; it feeds a "
        "generator of 50,000 rows and checks the first chunk is written after 10,000.",
        (
            ScriptedTool(
                "Bash", {"command": "pytest tests/test_export.py -q"}, ToolOutput("6 passed in 1.3s")
            ),
        ),
    ),
    ScriptedTurn(
        "Name it after what it proves, not how.",
        "Renamed it to `test_big_exports_start_at_once`.",
    ),
)
_CODEX = (
    ScriptedTurn(
        "Write the changelog entry for the streaming export.",
        "Added under Fixed: the quarterly report export streams its CSV, so big customers no "
        "longer get a 504 from the gateway.",
        (
            ScriptedTool(
                "exec_command",
                {"cmd": "git log --oneline -3 -- api/reports"},
                ToolOutput("a1b2c3d Stream CSV"),
            ),
        ),
    ),
)
HARNESS_START = datetime.fromtimestamp(FINISHED - 3600, timezone.utc)  # an hour before they finished


@dataclass(frozen=True)
class DemoSessions:
    main: str
    fork: str
    subagent: str
    orphan: str
    claude_code: str
    codex: str


def seed_sessions(root: Path, cwd: str) -> DemoSessions:
    """Write the demo's sessions of workspace `cwd`: DSH's under the session root `root`, the
    other harnesses' in their homes beside it (`harness_home`)."""
    main = build_scripted_session(demo_model.DEMO_TURNS, seed=2026, cwd=cwd)
    fork = fork_session(main, _OTHER_WAY, seed=2027, after_turn=2)
    subagent = subagent_session(main, _CALLERS, seed=2028, label="find the callers")
    lost_parent = build_scripted_session(_LOST_PARENT, seed=2029, cwd=cwd)  # never written
    orphan = fork_session(lost_parent, _ORPHAN, seed=2030, after_turn=1)
    dsh = [
        _finished(write_session(root, draft), str(draft.header.id))
        for draft in (main, fork, subagent, orphan)
    ]
    claude_code, codex = derived_id("demo", "claude-code"), derived_id("demo", "codex")
    claude_home, codex_home = harness_home(root, "claude-code"), harness_home(root, "codex")
    _finished(
        write_claude_code_session(claude_home, cwd, claude_code, _CLAUDE_CODE, HARNESS_START), claude_code
    )
    _finished(write_codex_session(codex_home, cwd, codex, _CODEX, HARNESS_START), codex)
    return DemoSessions(*dsh, claude_code, codex)


def harness_home(session_root: Path, harness: str) -> Path:
    """The demo's home folder of `harness` (a key of `HARNESS_HOMES`): beside the DSH root."""
    return session_root.parent / HARNESS_HOMES[harness]


def _finished(path: Path, session_id: str) -> str:
    os.utime(path, (FINISHED, FINISHED))
    return session_id


def demo_settings(session_root: Path, user_settings: Path | None) -> dict[str, Any]:
    """The demo home's settings: its session roots and the user's consolidation route, if usable."""
    harnesses = [{"path": str(harness_home(session_root, h)), "format": h} for h in HARNESS_HOMES]
    settings: dict[str, Any] = {"sessions": {"roots": [str(session_root), *harnesses]}}
    if user_settings is None or not user_settings.is_file():
        return settings
    try:
        theirs = parse_settings(user_settings.read_bytes(), str(user_settings))
    except (OSError, SettingsError) as exc:
        print(f"The demo uses remem's default model: {exc}", file=sys.stderr)
        return settings
    chosen = theirs.model_dump(exclude_unset=True, include={"consolidation", "providers"})
    return {**settings, **chosen}


# Above the provider it describes, not the route: `remem settings model` rewrites the route in
# this text, comments kept, and a note about the route would then speak of one no longer there.
DEMO_MODEL_NOTE = f"""\
# scripts/demo wrote the provider `{demo_model.PROVIDER}` below: remem's scripted demo model
# (scripts/demo_model.py), which serves only while scripts/demo runs, with the key it gives it
# for that run; once the demo has ended, no key brings it back. A route to it then needs
# scripts/demo run again, or a model of yours in its place:
#   REMEM_HOME=<this folder> remem settings model --provider P --model M
"""


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
    providers = {"providers": chosen.pop("providers")} if demo_model_url else {}
    settings = yaml.safe_dump(chosen, sort_keys=False)
    if providers:
        settings += DEMO_MODEL_NOTE + yaml.safe_dump(providers, sort_keys=False)
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
    print(sessions.main, sessions.claude_code, sessions.codex)  # what scripts/demo walks through
    return 0


if __name__ == "__main__":
    sys.exit(main())
