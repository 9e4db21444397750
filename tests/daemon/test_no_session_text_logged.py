"""A provider's 400 that quotes the session, through the daemon: the user hears what failed and
why, and neither the daemon's log file nor the debug log holds the quote (decision 0373)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.consolidation.conftest import configure, write_source
from tests.consolidation.test_provider_text_kept_from_logs import first_prompt, quoting
from tests.fake_openai import FakeOpenAI

from .helpers import remem

pytestmark = pytest.mark.slow


def test_a_400_quoting_the_session_is_told_to_the_user_and_kept_from_the_logs(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root, debug="true")
    source = write_source(root, str(tmp_path / "project"))
    prompt = first_prompt(source)
    fake.reply(quoting(prompt))
    told = remem(home, "consolidate", source.id)
    receipts = remem(home, "receipts", "--json")
    remem(home, "daemon", "stop")
    assert fake.count == 1 and told.stdout.startswith("provider-failed"), told.stdout + told.stderr
    daemon_log = DaemonPaths(home).log.read_text()
    debug = list(home.debug.rglob("*.jsonl"))
    assert len(debug) == 1
    for logged in (daemon_log, debug[0].read_text()):
        assert prompt not in logged and "Invalid prompt" not in logged
    failed = [json.loads(line) for line in debug[0].read_text().splitlines() if "attempt-failed" in line]
    cause = f"BadRequestError, HTTP 400, type invalid_request_error (asked {fake.base_url})"
    assert [line["error"] for line in failed] == [cause]
    assert f"attempt 1 ended provider-failed: {cause}" in daemon_log
    assert "the provider refused the request (HTTP 400 bad request, asked " in told.stdout, "what failed"
    assert "choose another model (remem settings model) — Invalid prompt" in told.stdout, "and why"
    assert prompt in told.stdout and prompt in receipts.stdout, "the user reads the provider's reason"
