"""A cold listing's worker processes only read session files: they start without the listing's
credentials, the key variables the settings name and any variable named as a credential
(decision 0374), and with everything else they need."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from remem.daemon.credentials import without_credentials
from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.cold_reads import ColdReads
from remem.daemon.settings import SettingsStore
from tests.sessions.factory import build_family, write_session

from .cold_read_workers import workers

SPREAD = ColdReads(processes=2, min_bytes=0, share_bytes=1)  # workers start for any listing
KEY_ENV = "MINE_MODEL_CREDENTIAL"  # named by settings.yml; its name alone says no key
CREDENTIALS = {
    KEY_ENV: "mine-key-3b1f",
    "OPENAI_API_KEY": "sk-test-openai",
    "ANTHROPIC_API_KEY": "sk-ant-test",
    "GITHUB_TOKEN": "ghp-test",
    "DB_PASSWORD": "hunter2",
    "AWS_SECRET_ACCESS_KEY": "aws-test",
    "CLIENT_SECRET": "client-test",
}
# What a worker needs, or may: the conftest sets the harness homes and REMEM_HOME.
KEPT = ("PATH", "HOME", "PYTHONPATH", "LANG", "REMEM_HOME", "REMEM_NOTE", "DSH_HOME", "CLAUDE_CONFIG_DIR",
        "CODEX_HOME", "TOKENIZERS_PARALLELISM", "SSH_AUTH_SOCK")  # fmt: skip


def test_a_cold_listings_workers_start_without_credentials(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    pythonpath = os.pathsep.join(filter(None, [str(tmp_path / "lib"), os.environ.get("PYTHONPATH")]))
    others = {"PYTHONPATH": pythonpath, "LANG": "C.UTF-8", "REMEM_NOTE": "kept",
              "TOKENIZERS_PARALLELISM": "false", "SSH_AUTH_SOCK": "/run/agent"}  # fmt: skip
    for name, value in others.items():
        monkeypatch.setenv(name, value)
    root = tmp_path / "dsh-sessions"
    for draft in build_family(4, cwd="/home/dev/projects/demo").drafts:
        write_session(root, draft)
    home.ensure_layout()
    home.settings_file.write_text(
        f"providers:\n  mine:\n    base_url: http://127.0.0.1:9/v1\n    api_key_env: {KEY_ENV}\n"
        f"sessions:\n  roots: [{str(root)!r}]\n"
    )
    settings, _ = SettingsStore(home).read()
    catalog = SessionCatalog.configured(home, settings, cold_reads=SPREAD)
    seen: dict[int, dict[str, str]] = {}

    def progress(done: int, total: int) -> None:
        """The environment of each worker, read while the listing waits here (its workers
        hold shares, so none ends before the listing does)."""
        deadline = time.monotonic() + 60
        while not seen and time.monotonic() < deadline:
            seen.update((pid, _environment(pid)) for pid in workers())
            time.sleep(0.01)

    listing = catalog.listing(progress=progress)
    assert len(listing.sessions) == len(build_family(4).drafts), "the listing is whole"
    assert seen, "a worker was seen"
    assert all(os.environ[name] == value for name, value in CREDENTIALS.items()), "the listing's own"
    for pid, environment in seen.items():
        assert sorted(set(CREDENTIALS) & set(environment)) == [], pid
        assert {name: environment.get(name) for name in KEPT} == {name: os.environ[name] for name in KEPT}


def _environment(pid: int) -> dict[str, str]:
    """The environment process `pid` was started with (a worker's cmdline, which `workers`
    matched, says it is past its exec: the environment is its own, not its parent's)."""
    data = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (item.partition(b"=") for item in data.split(b"\0") if item)
    return {os.fsdecode(name): os.fsdecode(value) for name, _, value in pairs}


@pytest.mark.parametrize(
    "name", ["OPENAI_API_KEY", "DEEPSEEK_APIKEY", "HF_TOKEN", "TOKEN", "APP_SECRET", "PGPASSWORD_X"]
)
def test_a_variable_is_dropped_by_its_name_or_the_settings(name: str) -> None:
    dropped = without_credentials({name: "x", "PATH": "/bin"}, named={"PGPASSWORD_X"})
    assert dropped == {"PATH": "/bin"}


@pytest.mark.parametrize(
    "name", ["TOKENIZERS_PARALLELISM", "SSH_AUTH_SOCK", "KEYTIMEOUT", "LC_ALL", "REMEM_HOME"]
)
def test_a_variable_named_otherwise_is_kept(name: str) -> None:
    assert without_credentials({name: "x"}, named={"MINE_MODEL_CREDENTIAL"}) == {name: "x"}
