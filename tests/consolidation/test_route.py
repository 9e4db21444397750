"""The model route: providers, keys from the environment or a private credentials file."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon import credentials
from remem.daemon.consolidation import route
from remem.daemon.consolidation.route import RouteError, read_credentials, resolve_route, store_api_key
from remem.daemon.faults import EXIT_CODE
from remem.daemon.fsutil import is_temp_name
from remem.daemon.home import Home, HomeUnusable
from remem.daemon.settings import parse_settings

REPO = Path(__file__).resolve().parents[2]


def settings(text: str = ""):  # type: ignore[no-untyped-def]
    return parse_settings(text.encode(), "settings.yml")


def test_default_route_needs_the_deepseek_key(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    with pytest.raises(RouteError) as missing:
        resolve_route(home, settings())
    assert "DEEPSEEK_API_KEY" in str(missing.value) and "credentials.yml" in str(missing.value)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-from-env")
    route = resolve_route(home, settings())
    assert (route.provider, route.model, route.base_url) == (
        "deepseek",
        "deepseek-v4-flash",
        "https://api.deepseek.com",
    )
    assert route.api_key == "sk-from-env" and "sk-from-env" not in repr(route)


def test_credentials_file_must_be_private_and_well_formed(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    chosen = settings("consolidation:\n  provider: openai\n  model: gpt-x\n")
    home.ensure_layout()
    home.credentials_file.write_text("providers:\n  openai:\n    api_key: sk-stored\n")
    home.credentials_file.chmod(0o644)
    with pytest.raises(RouteError) as loose:
        resolve_route(home, chosen)
    assert "chmod 600" in str(loose.value)
    home.credentials_file.chmod(0o600)
    assert resolve_route(home, chosen).api_key == "sk-stored"
    home.credentials_file.write_text("providers:\n  openai:\n    apikey: sk-secret-typo\n")
    with pytest.raises(RouteError) as bad:
        resolve_route(home, chosen)
    assert "sk-secret-typo" not in str(bad.value) and "apikey" in str(bad.value)


def test_a_local_provider_needs_no_key_but_a_chosen_model(home: Home) -> None:
    """remem knows no default model of ollama: deepseek's, the key's default, is never sent to it."""
    with pytest.raises(RouteError) as unchosen:
        resolve_route(home, settings("consolidation:\n  provider: ollama\n"))
    assert str(unchosen.value).startswith("remem knows no default model of ollama: choose one with")
    route = resolve_route(home, settings("consolidation:\n  provider: ollama\n  model: qwen3:8b\n"))
    assert route.base_url.startswith("http://127.0.0.1") and route.api_key and route.model == "qwen3:8b"


def test_the_output_budget_is_the_smaller_of_the_setting_and_the_models_limit(home: Home) -> None:
    local = "providers:\n  small:\n    base_url: http://127.0.0.1:9/v1\n    max_output_tokens: 4096\n"
    route = "consolidation:\n  provider: small\n  model: local-model\n"
    assert resolve_route(home, settings(local + route)).max_tokens == 4096
    roomy = local.replace("4096", "32000") + route + "  max_tokens: 8192\n"
    assert resolve_route(home, settings(roomy)).max_tokens == 8192


def test_of_the_base_urls_query_only_the_values_of_credentials_are_remembered(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key in the base_url's query (a gateway's) is masked wherever a server's error echoes the
    path the SDK built. A model's name or an API version is none: remembered, until the process
    ends, it was masked in the session evidence the model reads and in logs (decision 0413)."""
    monkeypatch.setattr(credentials, "_remembered", ())  # what this test remembers is forgotten
    query = "&".join(
        [
            "model=gpt-4o-mini",
            "api-version=2024-02-01",
            "api%2Dkey=gateway%2Bkey-41c7",  # as written and percent-decoded
            "X-Amz-Signature=5d672d79c15b",
            "code=functions-key-9e2",
            "a-key-without-a-name",
        ]
    )
    gateway = f"providers:\n  gateway:\n    base_url: 'http://127.0.0.1:9/v1?{query}'\n"
    resolve_route(home, settings(gateway + "consolidation:\n  provider: gateway\n  model: gpt-x\n"))
    said = "gpt-4o-mini 2024-02-01 gateway%2Bkey-41c7 gateway+key-41c7 5d672d79c15b functions-key-9e2"
    assert credentials.redact(f"{said} a-key-without-a-name") == "gpt-4o-mini 2024-02-01" + (
        " [redacted route-key]" * 5
    )


def test_a_stored_key_is_private_keeps_the_others_and_makes_the_route(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    home.ensure_layout()
    store_api_key(home, "deepseek", "sk-deep")
    store_api_key(home, "openai", "  sk-open\n")
    assert stat.S_IMODE(home.credentials_file.stat().st_mode) == 0o600
    assert resolve_route(home, settings()).api_key == "sk-deep"
    chosen = settings("consolidation:\n  provider: openai\n  model: gpt-x\n")
    assert resolve_route(home, chosen).api_key == "sk-open"
    assert [p.name for p in home.root.iterdir() if is_temp_name(p.name)] == []


def test_a_key_is_not_stored_into_a_file_other_users_can_read(home: Home) -> None:
    home.ensure_layout()
    home.credentials_file.write_text("providers: {}\n")
    home.credentials_file.chmod(0o644)
    with pytest.raises(RouteError, match="chmod 600"):
        store_api_key(home, "openai", "sk-x")
    assert "sk-x" not in home.credentials_file.read_text()


@pytest.mark.slow
def test_a_crash_while_storing_a_key_keeps_the_old_file(home: Home) -> None:
    home.ensure_layout()
    store_api_key(home, "openai", "sk-old")
    crashed = subprocess.run(
        [sys.executable, "-m", "tests.memory.driver", "store-api-key", str(home.root), "openai", "sk-new"],
        cwd=REPO,
        env={**os.environ, "REMEM_FAULTPOINT": "credentials.after-temp-write"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    assert read_credentials(home).providers["openai"].api_key == "sk-old"
    store_api_key(home, "openai", "sk-new")  # the next write clears what the crash left
    assert read_credentials(home).providers["openai"].api_key == "sk-new"
    assert [p.name for p in home.root.iterdir() if is_temp_name(p.name)] == []


def linked_credentials(home: Home, tmp_path: Path, mode: int) -> Path:
    """`credentials.yml` kept in a dotfiles repository and linked into the home (relative, as
    GNU stow links it), holding an openai key; the target's path."""
    home.ensure_layout()
    target = tmp_path / "dotfiles" / "remem" / "credentials.yml"
    target.parent.mkdir(parents=True)
    target.write_text("providers:\n  openai:\n    api_key: sk-dotfiles\n")
    target.chmod(mode)
    home.credentials_file.symlink_to(Path("..") / "dotfiles" / "remem" / "credentials.yml")
    return target


def test_a_key_is_read_through_a_linked_credentials_file_whose_target_must_be_private(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mode checked is the target's, the file read: a link's own mode (0777) says nothing."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    target = linked_credentials(home, tmp_path, 0o600)
    chosen = settings("consolidation:\n  provider: openai\n  model: gpt-x\n")
    assert stat.S_IMODE(home.credentials_file.lstat().st_mode) & 0o077, "the link itself looks open"
    assert resolve_route(home, chosen).api_key == "sk-dotfiles"
    target.chmod(0o644)
    with pytest.raises(RouteError) as loose:
        resolve_route(home, chosen)
    path = home.credentials_file
    assert str(loose.value) == f"{path} is readable by other users; run `chmod 600 {path}` first"


def refused_as_linked(home: Home, target: Path, provider: str) -> str:
    target = Path(os.path.realpath(target))  # named as the user edits it: every link resolved
    return (
        f"{home.credentials_file} is a symbolic link to {target}, and remem does not write through "
        f"links (it writes only inside its home), so nothing was written; to set "
        f"providers.{provider}.api_key, edit {target} yourself, or replace the link with a copy of the file"
    )


def test_a_key_is_never_stored_through_a_linked_credentials_file(home: Home, tmp_path: Path) -> None:
    """Replacing the name would put a regular file in place of the user's link (their dotfiles
    copy then stale and disconnected); writing through it would write outside the home. Neither:
    the link and its target stay exactly as they were, and the refusal says what to do."""
    target = linked_credentials(home, tmp_path, 0o600)
    before = target.read_bytes()
    with pytest.raises(HomeUnusable) as refused:
        store_api_key(home, "openai", "sk-typed-in-the-editor")
    assert str(refused.value) == refused_as_linked(home, target, "openai")
    assert "sk-typed" not in str(refused.value)
    assert os.readlink(home.credentials_file) == "../dotfiles/remem/credentials.yml"
    assert target.read_bytes() == before and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in home.root.iterdir() if is_temp_name(p.name)] == []
    assert list(target.parent.iterdir()) == [target]


def test_a_link_made_while_a_key_is_stored_is_left_in_place(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link put in place of the file after the first check (a dotfiles manager run meanwhile)
    is found again right before the replace: the written temp file goes, the link stays."""
    home.ensure_layout()
    store_api_key(home, "openai", "sk-old")
    target = tmp_path / "dotfiles" / "credentials.yml"
    target.parent.mkdir()
    target.write_text("providers:\n  openai:\n    api_key: sk-dotfiles\n")
    target.chmod(0o600)
    write_temp = route.write_temp

    def link_then_write(path: Path, *parts: bytes) -> Path:
        home.credentials_file.unlink()
        home.credentials_file.symlink_to(target)
        return write_temp(path, *parts)

    monkeypatch.setattr(route, "write_temp", link_then_write)
    with pytest.raises(HomeUnusable) as refused:
        store_api_key(home, "openai", "sk-new")
    assert str(refused.value) == refused_as_linked(home, target, "openai")
    assert os.readlink(home.credentials_file) == str(target)
    assert target.read_text() == "providers:\n  openai:\n    api_key: sk-dotfiles\n"
    assert [p.name for p in home.root.iterdir() if is_temp_name(p.name)] == []
