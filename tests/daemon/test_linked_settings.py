"""`settings.yml` and `credentials.yml` linked into the home from a dotfiles repository: read
through their links, never written through them, and a change is refused naming the link, its
target and what to set there, by the real daemon and by the CLI either way (decision 0375)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.fsutil import is_temp_name
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import HOME_UNUSABLE, RpcError
from remem.daemon.server.runtime import DaemonPaths
from tests.failure_said import failure_line
from tests.sessions.factory import SessionSpec, build_session, write_session

from .helpers import calls, remem, wait_until

pytestmark = pytest.mark.slow


def link_into(home: Home, name: str, text: str, dotfiles: Path) -> Path:
    """`home/name` as GNU stow leaves it: a relative link to the file in `dotfiles`."""
    target = dotfiles / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    target.chmod(0o600)
    (home.root / name).unlink(missing_ok=True)
    (home.root / name).symlink_to(os.path.relpath(target, home.root))
    return target


def refusal(link: Path, target: Path, change: str) -> str:
    target = Path(os.path.realpath(target))
    return (
        f"{link} is a symbolic link to {target}, and remem does not write through links (it writes "
        f"only inside its home), so nothing was written; to {change}, edit {target} yourself, or "
        "replace the link with a copy of the file"
    )


def untouched(home: Home, links: dict[Path, str], targets: dict[Path, bytes]) -> None:
    assert {link: os.readlink(link) for link in links} == links, "each link is left as it was"
    assert {target: target.read_bytes() for target in targets} == targets, "and so is its target"
    assert [p.name for p in home.root.iterdir() if is_temp_name(p.name)] == []
    assert [p for t in targets for p in t.parent.iterdir() if p not in targets] == []


def test_choosing_a_model_in_a_linked_settings_file_is_one_line_naming_the_link(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    target = link_into(home, "settings.yml", "daemon:\n  idle_minutes: 2\n", tmp_path / "dotfiles")
    links = {home.settings_file: os.readlink(home.settings_file)}
    targets = {target: target.read_bytes()}
    shown = remem(home, "settings", "model")
    assert shown.returncode == 0 and shown.stdout.startswith("deepseek/deepseek-v4-flash"), shown.stderr
    assert DaemonPaths(home).running(), "the command went through the daemon"
    change = 'set consolidation.provider: "openai", consolidation.model: "gpt-x"'
    line = f"remem: {refusal(home.settings_file, target, change)}\n"
    for way in ([], ["--no-daemon"]):
        for as_json in ([], ["--json"]):
            chosen = remem(
                home, *way, "settings", "model", "--provider", "openai", "--model", "gpt-x", *as_json
            )
            assert (chosen.returncode, failure_line(chosen.stdout, chosen.stderr, as_json=bool(as_json))) == (
                2,
                line,
            ), way + as_json
    untouched(home, links, targets)
    again = remem(home, "settings", "model")
    assert again.returncode == 0 and again.stdout.startswith("deepseek/deepseek-v4-flash"), "nothing changed"


def test_the_daemon_refuses_a_change_of_either_linked_file_as_the_home_in_the_way(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    dotfiles = tmp_path / "dotfiles" / "remem"
    settings = link_into(home, "settings.yml", "daemon:\n  idle_minutes: 2\n", dotfiles)
    credentials = link_into(
        home, "credentials.yml", "providers:\n  openai:\n    api_key: sk-dotfiles\n", dotfiles
    )
    links = {link: os.readlink(link) for link in (home.settings_file, home.credentials_file)}
    targets = {settings: settings.read_bytes(), credentials: credentials.read_bytes()}
    assert remem(home, "daemon", "start").returncode == 0
    [before] = calls(home, [("consolidation/settings/read", {})])
    select = {"provider": "openai", "model": "gpt-x", "expectedRevision": before["revision"]}
    chosen, stored, after = calls(
        home,
        [
            ("consolidation/settings/select", select),
            ("consolidation/credentials/set", {"provider": "openai", "apiKey": "sk-typed"}),
            ("consolidation/settings/read", {}),
        ],
    )
    assert isinstance(chosen, RpcError) and chosen.code == HOME_UNUSABLE, chosen
    change = 'set consolidation.provider: "openai", consolidation.model: "gpt-x"'
    assert chosen.message == refusal(home.settings_file, settings, change)
    assert isinstance(stored, RpcError) and stored.code == HOME_UNUSABLE, stored
    assert stored.message == refusal(home.credentials_file, credentials, "set providers.openai.api_key")
    assert after == before, "read through the links as before, and nothing changed"
    untouched(home, links, targets)
    log = DaemonPaths(home).log.read_text()
    assert "Traceback" not in log and "sk-typed" not in log


def test_an_edit_of_a_linked_settings_files_target_is_taken_up_by_the_daemon(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon watches `settings.yml` by its name in the home; an edit of a link's target is
    no event there. The daemon listed a root added there never, and said nothing of an error
    made there, while every command without it did."""
    monkeypatch.delenv(NO_DAEMON_ENV)
    settings = "daemon:\n  idle_minutes: 2\n"
    target = link_into(home, "settings.yml", settings, tmp_path / "dotfiles")
    listed = calls(home, [("sessions/list", {})])[0]["sessions"]
    extra = tmp_path / "extra"
    draft = build_session(SessionSpec(seed=4, turns=2, cwd="/home/dev/p"))
    write_session(extra, draft)
    target.write_text(f"{settings}sessions:\n  roots: [{str(extra)!r}]\n")
    ids = lambda: {s["id"] for s in calls(home, [("sessions/list", {})])[0]["sessions"]}  # noqa: E731
    wait_until(lambda: draft.header.id in ids(), seconds=30)
    assert ids() == {s["id"] for s in listed} | {draft.header.id}
    target.write_text(f"{settings}sessions: [\n")
    status = lambda: calls(home, [("daemon/status", {})])[0]["settingsProblems"]  # noqa: E731
    wait_until(lambda: bool(calls(home, [("sessions/list", {})])) and status(), seconds=30)
    assert "not valid YAML" in status()[0]
