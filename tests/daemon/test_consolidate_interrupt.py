"""Ctrl-C on `remem consolidate` through the daemon stops the daemon's review too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from tests.consolidation.conftest import KEY_ENV, configure, proposal, put, write_source
from tests.fake_openai import FakeOpenAI, slow, tool_call

pytestmark = pytest.mark.slow


def test_an_interrupted_consolidate_cancels_the_review_in_the_daemon(home: Home, tmp_path: Path) -> None:
    with FakeOpenAI(api_key="sk-test") as fake:
        root = tmp_path / "dsh-sessions"
        configure(home, fake, root)
        home.settings_file.write_text(home.settings_file.read_text() + "daemon:\n  idle_minutes: 2\n")
        source = write_source(root, str(tmp_path / "project"))
        fake.reply(slow(8, tool_call(proposal(put("prefer-uv", source.evidence())))))
        env = {k: v for k, v in os.environ.items() if k != NO_DAEMON_ENV} | {KEY_ENV: "sk-test"}
        command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root)]
        running = subprocess.Popen(
            [*command, "consolidate", source.id], env=env, stderr=subprocess.PIPE, text=True
        )
        assert running.stderr is not None
        for line in running.stderr:  # the model has been asked: the review is under way
            if "model-step" in line:
                break
        running.send_signal(signal.SIGINT)
        err = running.stderr.read()
        assert running.wait(30) == 1 and "the daemon cancelled the review" in err, err
        listed = subprocess.run([*command, "receipts", "--json"], env=env, capture_output=True, text=True)
        [receipt] = json.loads(listed.stdout)["receipts"]
        assert receipt["status"] == "cancelled" and receipt["changes"] == []
        assert not (home.workspaces.exists() and list(home.workspaces.rglob("prefer-uv.md")))
