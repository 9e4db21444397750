"""A provider's 401 that echoes the API key: the key reaches no receipt, debug entry, log or output."""

from __future__ import annotations

import base64
import json
import logging
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon import credentials
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from tests.consolidation.conftest import KEY_ENV, configure, write_source
from tests.fake_openai import FakeOpenAI, status

from .helpers import calls, remem

pytestmark = pytest.mark.slow
# No credential pattern matches either: only their values can.
KEY = "remem-test-route-key-7f3a9c2e71d04b5f"
PASSWORD = "proxy-login-5e1b"
QUERY_KEY = "gateway-query-key-41c7d09e"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.delenv(NO_DAEMON_ENV)
    with FakeOpenAI() as server:
        yield server


def test_a_key_echoed_by_the_provider_is_kept_nowhere(home: Home, fake: FakeOpenAI, tmp_path: Path) -> None:
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root, debug="true")
    source = write_source(root, str(tmp_path / "project"))
    fake.reply(status(401, f"Incorrect API key provided: {KEY}. Find your key in the dashboard."))
    ran = remem(home, "consolidate", source.id, "--json")
    outputs = [ran, remem(home, "receipts"), remem(home, "receipts", "--json")]
    remem(home, "daemon", "stop")
    assert json.loads(ran.stdout)["status"] == "provider-failed" and fake.count == 1
    for output in outputs:
        assert KEY not in output.stdout + output.stderr
    assert "Incorrect API key provided: [redacted route-key]" in outputs[2].stdout
    files = [p for p in home.root.rglob("*") if p.is_file()]
    assert home.state / "daemon.log" in files and any(home.debug in p.parents for p in files)
    assert [p for p in files if KEY.encode() in _bytes(p)] == []
    # The debug log and a hand-made settings.yml are user-only, like the rest of the home.
    assert stat.S_IMODE(home.settings_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.debug.stat().st_mode) == 0o700


def test_a_base_url_login_echoed_by_the_provider_is_kept_nowhere(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    """A login in the base_url is sent as HTTP Basic auth; a provider that echoed the header
    (its base64 of `user:password`) put it in the receipt and the CLI's output, unmasked."""
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root)
    settings = home.settings_file.read_text()
    home.settings_file.write_text(settings.replace("base_url: http://", f"base_url: http://bob:{PASSWORD}@"))
    source = write_source(root, str(tmp_path / "project"))
    basic = base64.b64encode(f"bob:{PASSWORD}".encode()).decode()
    fake.reply(status(401, f"Unknown credentials: Basic {basic}"))
    ran = remem(home, "consolidate", source.id, "--json")
    outputs = [ran, remem(home, "receipts", "--json")]
    remem(home, "daemon", "stop")
    assert json.loads(ran.stdout)["status"] == "provider-failed" and fake.count == 1
    assert "Unknown credentials: Basic [redacted route-key]" in outputs[1].stdout
    settings_copies = {home.settings_file, home.state / "settings.valid.json"}  # where the user put it
    for secret in (basic, PASSWORD):
        assert all(secret not in o.stdout + o.stderr for o in outputs)
        holding = {p for p in home.root.rglob("*") if p.is_file() and secret.encode() in _bytes(p)}
        assert holding <= settings_copies, holding


def test_a_key_in_the_base_urls_query_is_kept_nowhere(home: Home, fake: FakeOpenAI, tmp_path: Path) -> None:
    """A gateway taking its key in the query (`?key=...`): httpx's request lines, the model list's
    note and its log line, the receipt and the CLI's output showed the base_url with it."""
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root, debug="true")
    settings = home.settings_file.read_text()
    home.settings_file.write_text(settings.replace(fake.base_url, f"{fake.base_url}?key={QUERY_KEY}"))
    source = write_source(root, str(tmp_path / "project"))
    fake.reply(status(401, "Incorrect API key provided."))
    ran = remem(home, "consolidate", source.id, "--json")
    (listed,) = calls(home, [("consolidation/models", {"provider": "fake"})])  # no `GET /models`: 404
    outputs = [ran, remem(home, "receipts", "--json")]
    remem(home, "daemon", "stop")
    # The SDK appends the path to the query (`/v1/?key=...chat/completions`): the fake's 404
    # echoes it, as a provider's "invalid URL" may.
    assert json.loads(ran.stdout)["status"] == "provider-failed"
    assert "no route POST /v1/?key=[redacted route-key]chat/completions" in outputs[1].stdout
    shown = f"{fake.base_url}?key=[redacted query]"
    assert listed["note"] == f"fake did not list its models at {shown} (HTTP 404)"
    assert f"(HTTP 404 not found, asked {shown})" in outputs[1].stdout
    log = (home.state / "daemon.log").read_text()
    assert f"HTTP Request: GET {fake.origin}/v1/?key=[redacted query] " in log  # `models` appended too
    assert all(QUERY_KEY not in o.stdout + o.stderr for o in outputs)
    files = [p for p in home.root.rglob("*") if p.is_file()]
    assert any(home.debug in p.parents for p in files), "the debug log is looked in too"
    holding = {p for p in files if QUERY_KEY.encode() in _bytes(p)}
    assert holding <= {home.settings_file, home.state / "settings.valid.json"}, holding


def _bytes(path: Path) -> bytes:
    """The file's bytes; none for a file that went away since it was listed (SQLite removes its
    -shm and -wal files when the last connection to the index closes)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def test_log_lines_and_tracebacks_are_redacted() -> None:
    credentials.remember(KEY)
    handler = logging.StreamHandler()
    handler.setFormatter(credentials.RedactingFormatter("%(message)s"))
    try:
        raise RuntimeError(f"provider said: bad key {KEY} (token=abc123def)")
    except RuntimeError:
        record = logging.LogRecord("remem.daemon", logging.ERROR, __file__, 1, "failed %s", (KEY,), True)
        record.exc_info = sys.exc_info()
    line = handler.format(record)
    assert KEY not in line and "token=[redacted secret]" in line and "Traceback" in line


def test_a_process_logs_to_stderr_masked(capfd: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    credentials.remember(KEY)
    try:
        credentials.log_to_stderr(logging.WARNING, "remem lsp: %(message)s")
        try:
            raise RuntimeError(f"provider said: bad key {KEY}")
        except RuntimeError:
            logging.getLogger("remem.lsp").exception("failed with %s", KEY)
        logging.getLogger("remem.lsp").info("below the level")
        said = capfd.readouterr().err
    finally:
        root.handlers[:], root.level = handlers, level
    assert said.startswith("remem lsp: failed with ") and "Traceback" in said
    assert KEY not in said and "below the level" not in said
