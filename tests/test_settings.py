"""settings.yml: strict parsing with key-and-line errors, and CAS updates."""

from __future__ import annotations

import os
import stat
import traceback
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from remem.daemon import swap
from remem.daemon.home import Home, HomeUnusable
from remem.daemon.safe_open import HeldFolder
from remem.daemon.settings import SettingsConflict, SettingsError, SettingsStore, parse_settings

from .yaml_bombs import BILLION_LAUGHS, ERROR_BYTES_MAX, FIRST_ALIAS_LINE


def test_defaults_when_file_is_missing_or_empty(home: Home) -> None:
    settings, revision = SettingsStore(home).read()
    assert settings.consolidation.provider == "deepseek"
    assert settings.sessions.idle_seconds == 120 and settings.daemon.idle_minutes == 60
    assert parse_settings(b"") == settings
    assert revision.startswith("sha256:")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sessions:\n  roots: []\n  idle_secs: 5\n", "settings.yml:3: sessions.idle_secs: unknown key"),
        (
            "consolidation:\n  max_tokens: '8192'\n",
            "settings.yml:2: consolidation.max_tokens: Input should be a valid integer",
        ),
        (
            "daemon:\n  idle_minutes: 0\n",
            "settings.yml:2: daemon.idle_minutes: Input should be greater than 0",
        ),
        (
            "consolidation:\n  debug: 1\n",
            "settings.yml:2: consolidation.debug: Input should be a valid boolean",
        ),
        ("colour: blue\n", "settings.yml:1: colour: unknown key"),
        ("providers:\n  mine:\n    url: x\n", "settings.yml:3: providers.mine.url: unknown key"),
        (
            "consolidation:\n  model: m\n  provider: mine\n",
            "settings.yml:3: consolidation.provider: `mine` is not defined",
        ),
        (
            "daemon:\n  idle_minutes: 5\nsessions:\n#  roots: []\n",
            "settings.yml:3: sessions: is a section, its keys indented below it, but holds nothing "
            "(its keys may all be commented out); to keep its defaults, remove it",
        ),
        (
            "daemon: 5\n",
            "settings.yml:1: daemon: is a section, its keys indented below it, but holds one value",
        ),
        ("sessions: [\n", "settings.yml:2: not valid YAML"),
        (
            "consolidation:\n  model: \x1b[1mgpt-4o\x1b[0m\n",
            "settings.yml:2: character U+001B is not allowed in YAML; delete it",
        ),
        ("daemon:\n  idle_minutes: 5\x00\n", "settings.yml:2: character U+0000 is not allowed in YAML"),
        (
            "# 日本語のコメント 日本語のコメント\nx: \x07\n",
            "settings.yml:2: character U+0007",
        ),  # bytes are no characters
        (
            "daemon: {idle_minutes: 2, idle_minutes: 3}\n",
            "settings.yml:1: daemon.idle_minutes: appears twice",
        ),
        ("daemon:\n  watch: polling\ndaemon:\n  idle_minutes: 3\n", "settings.yml:3: daemon: appears twice"),
        (
            "x: " + "[" * 900 + "]" * 900 + "\n",
            "settings.yml:1: x: unknown key",
        ),  # deeper than Python recurses
        ("- a\n", "settings.yml:1: settings must be a mapping"),
    ],
)
def test_errors_name_the_key_and_line(text: str, expected: str) -> None:
    with pytest.raises(SettingsError) as caught:
        parse_settings(text.encode())
    assert any(problem.startswith(expected) for problem in caught.value.problems), caught.value.problems


@pytest.mark.parametrize(
    ("roots", "expected"),
    [
        (
            "[123]",
            ["settings.yml:2: sessions.roots.0: a root is a folder path, or a mapping of path (and format)"],
        ),
        ("[{path: /x, format: nope}]", ["settings.yml:2: sessions.roots.0.format: Input should be 'dsh',"]),
        (
            "[/x, {pth: /y}]",
            [
                "settings.yml:2: sessions.roots.1.path: Field required",
                "settings.yml:2: sessions.roots.1.pth: unknown key",
            ],
        ),
    ],
)
def test_a_wrong_root_is_told_what_a_root_is_once(roots: str, expected: list[str]) -> None:
    """Not how each alternative type (a string, a mapping) failed, named by internal type names."""
    with pytest.raises(SettingsError) as caught:
        parse_settings(f"sessions:\n  roots: {roots}\n".encode())
    problems = caught.value.problems
    assert len(problems) == len(expected) and all(
        p.startswith(e) for p, e in zip(problems, expected, strict=True)
    ), problems


def test_a_root_holding_a_nul_is_refused_by_its_settings() -> None:
    """YAML's "\\0" puts a NUL in a string, which no file name can hold: said where it is written,
    not first when the daemon looks in the root."""
    with pytest.raises(SettingsError) as caught:
        parse_settings(b'sessions:\n  roots: ["/abs/\\0x", {path: "~/y\\0"}]\n')
    assert caught.value.problems == [
        "settings.yml:2: sessions.roots.0: '/abs/\\x00x' holds a NUL character, which no file name can; "
        "write the folder's path without it",
        "settings.yml:2: sessions.roots.1.path: '~/y\\x00' holds a NUL character, which no file name "
        "can; write the folder's path without it",
    ]


def test_a_relative_root_is_refused_with_what_to_write_instead() -> None:
    """The daemon runs from another folder than the command that started it: a relative root
    would be looked for there (decision 0362). An absolute path and one from ~ name one folder."""
    text = (
        b"sessions:\n  roots:\n    - dshroot\n    - {path: ./rel/x, format: codex}\n    - /abs\n    - ~/y\n"
    )
    with pytest.raises(SettingsError) as caught:
        parse_settings(text)
    assert caught.value.problems == [
        "settings.yml:3: sessions.roots.0: 'dshroot' is a relative path, which the daemon would look for "
        "from its own working folder, not this file's; write the absolute path (/…/dshroot) or one "
        "starting with ~",
        "settings.yml:4: sessions.roots.1.path: './rel/x' is a relative path, which the daemon would look "
        "for from its own working folder, not this file's; write the absolute path (/…/./rel/x) or one "
        "starting with ~",
    ]
    assert parse_settings(b"sessions:\n  roots: [/abs, ~/y, {path: ~/z, format: dsh}]\n").sessions.roots[
        :2
    ] == [
        "/abs",
        "~/y",
    ]


def test_every_problem_is_reported() -> None:
    with pytest.raises(SettingsError) as caught:
        parse_settings(b"sessions:\n  idle_seconds: -1\ndaemon:\n  nap: 1\n")
    assert len(caught.value.problems) == 2


def test_custom_provider_is_accepted() -> None:
    text = b"providers:\n  local:\n    base_url: http://127.0.0.1:9/v1\nconsolidation:\n  provider: local\n"
    assert parse_settings(text).all_providers()["local"].base_url == "http://127.0.0.1:9/v1"


def test_a_file_read_again_unchanged_is_one_shared_snapshot_nobody_can_change(home: Home) -> None:
    store = SettingsStore(home.ensure_layout())  # the test writes its file there first
    home.settings_file.write_text("sessions:\n  idle_seconds: 30\n")
    first, _ = store.read()
    assert store.read()[0] is first
    with pytest.raises(ValidationError, match="frozen"):
        first.sessions.idle_seconds = 5  # type: ignore[misc]
    home.settings_file.write_text("sessions:\n  idle_seconds: 45\n")
    assert store.read()[0].sessions.idle_seconds == 45


def test_an_invalid_file_is_refused_on_every_read(home: Home) -> None:
    store = SettingsStore(home.ensure_layout())  # the test writes its file there first
    home.settings_file.write_text("sessions:\n  idle_secs: 5\n")
    for _ in range(2):
        with pytest.raises(SettingsError, match="sessions.idle_secs: unknown key"):
            store.read()


def test_update_is_compare_and_swap(home: Home) -> None:
    store = SettingsStore(home.ensure_layout())  # the test writes its file there first
    home.settings_file.write_text("sessions:\n  idle_seconds: 30\n")
    _, revision = store.read()
    new_revision = store.update(revision, {"consolidation.model": "deepseek-v4-pro"})
    settings, current = store.read()
    assert current == new_revision
    assert settings.consolidation.model == "deepseek-v4-pro"
    assert settings.sessions.idle_seconds == 30, "keys the user set survive a rewrite"
    assert "max_tokens" not in home.settings_file.read_text(), "defaults are not written out"
    assert stat.S_IMODE(home.settings_file.stat().st_mode) == 0o600
    with pytest.raises(SettingsConflict):
        store.update(revision, {"consolidation.model": "lost"})
    assert store.read()[0].consolidation.model == "deepseek-v4-pro"


@pytest.mark.parametrize("existed", [True, False], ids=["edited", "created"])
def test_a_hand_save_between_the_read_and_the_publish_is_kept(
    home: Home, existed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings lock binds remem's writers, not an editor: a save landing after the update
    read the file is kept, and the update is a conflict naming the file's new revision."""
    store = SettingsStore(home.ensure_layout())  # the test writes its file there first
    if existed:
        home.settings_file.write_text("sessions:\n  idle_seconds: 30\n")
    _, revision = store.read()
    saved = b"sessions:\n  idle_seconds: 45\n"
    write_temp = swap.write_temp_at

    def save_then_write(folder: HeldFolder, name: str, data: bytes, **options: Any) -> str:
        home.settings_file.write_bytes(saved)  # the editor's save, in the window
        return write_temp(folder, name, data, **options)

    monkeypatch.setattr(swap, "write_temp_at", save_then_write)
    with pytest.raises(SettingsConflict) as conflict:
        store.update(revision, {"consolidation.model": "deepseek-v4-pro"})
    assert home.settings_file.read_bytes() == saved
    assert conflict.value.revision == store.read()[1] != revision
    assert [p.name for p in home.root.iterdir() if ".remem-tmp-" in p.name] == []


def test_invalid_update_is_refused_and_nothing_written(home: Home) -> None:
    store = SettingsStore(home.ensure_layout())  # the test writes its file there first
    _, revision = store.read()
    with pytest.raises(SettingsError):
        store.update(revision, {"consolidation.max_tokens": "lots"})
    assert not home.settings_file.exists()


def test_a_billion_laughs_is_refused_without_ever_expanding_it(home: Home) -> None:
    home.ensure_layout()
    home.settings_file.write_text(BILLION_LAUGHS)
    with pytest.raises(SettingsError) as raised:
        SettingsStore(home).read()
    assert raised.value.problems == [
        f"{home.settings_file}:{FIRST_ALIAS_LINE}: YAML aliases are not allowed in settings.yml; "
        "write the value out in full"
    ]
    # What a crash would print, chained causes included, stays small: nothing walks the value.
    assert len("".join(traceback.format_exception(raised.value))) < ERROR_BYTES_MAX


def linked_settings(home: Home, tmp_path: Path, text: str | None) -> Path:
    """`settings.yml` as a dotfiles manager (GNU stow) leaves it: a relative link to the file in
    the user's repository (`text`; None: the link dangles). The target's path."""
    home.ensure_layout()
    target = tmp_path / "dotfiles" / "remem" / "settings.yml"
    target.parent.mkdir(parents=True)
    if text is not None:
        target.write_text(text)
    home.settings_file.symlink_to(Path("..") / "dotfiles" / "remem" / "settings.yml")
    return target


def refused_as_linked(home: Home, target: Path, change: str) -> str:
    target = Path(os.path.realpath(target))  # named as the user edits it: every link resolved
    return (
        f"{home.settings_file} is a symbolic link to {target}, and remem does not write through links "
        f"(it writes only inside its home), so nothing was written; to {change}, edit {target} "
        "yourself, or replace the link with a copy of the file"
    )


@pytest.mark.parametrize("text", ["sessions:\n  idle_seconds: 30\n", None], ids=["linked", "dangling"])
def test_a_linked_settings_file_is_read_through_its_link_and_never_written(
    home: Home, tmp_path: Path, text: str | None
) -> None:
    """The user's dotfiles link is theirs: remem reads it, and refuses an update with the link,
    its target and what to set there, never a conflict no retry could clear (decision 0375)."""
    target = linked_settings(home, tmp_path, text)
    store = SettingsStore(home.ensure_layout())  # the test writes its file there first
    settings, revision = store.read()
    assert settings.sessions.idle_seconds == (30 if text else 120), "read through the link"
    with pytest.raises(HomeUnusable) as refused:
        store.update(revision, {"consolidation.model": "deepseek-v4-pro"})
    assert str(refused.value) == refused_as_linked(home, target, 'set consolidation.model: "deepseek-v4-pro"')
    assert os.readlink(home.settings_file) == "../dotfiles/remem/settings.yml", "the link is left as it was"
    assert (target.read_text() if target.exists() else None) == text, "and so is its target"
    assert [p.name for p in home.root.iterdir() if ".remem-tmp-" in p.name] == []
    assert list(target.parent.iterdir()) == ([target] if text else [])


def test_a_link_put_in_place_of_settings_between_the_read_and_the_publish_is_left_and_named(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dotfiles manager linking the file while remem updates it: the publish's exchange gives
    the link back, and the update is refused as linked, not as a conflict."""
    store = SettingsStore(home.ensure_layout())  # the test writes its file there first
    home.settings_file.write_text("sessions:\n  idle_seconds: 30\n")
    _, revision = store.read()
    target = tmp_path / "dotfiles" / "settings.yml"
    target.parent.mkdir()
    target.write_text("sessions:\n  idle_seconds: 45\n")
    write_temp = swap.write_temp_at

    def link_then_write(folder: HeldFolder, name: str, data: bytes, **options: Any) -> str:
        home.settings_file.unlink()
        home.settings_file.symlink_to(target)  # `stow` run in the window
        return write_temp(folder, name, data, **options)

    monkeypatch.setattr(swap, "write_temp_at", link_then_write)
    with pytest.raises(HomeUnusable) as refused:
        store.update(revision, {"consolidation.model": "deepseek-v4-pro"})
    assert str(refused.value) == refused_as_linked(home, target, 'set consolidation.model: "deepseek-v4-pro"')
    assert os.readlink(home.settings_file) == str(target)
    assert target.read_text() == "sessions:\n  idle_seconds: 45\n"
    assert [p.name for p in home.root.iterdir() if ".remem-tmp-" in p.name] == []


def test_a_file_past_what_is_parsed_is_refused_unread(home: Home) -> None:
    """It was read whole, then refused: the daemon reads settings.yml for every request, and a
    200 MB file of comments with a dozen listings at once took it to 3.5 GB."""
    home.ensure_layout()
    home.settings_file.write_bytes(b"# a comment\n" * 2_000_000)  # 24 MB
    tracemalloc.start()
    try:
        with pytest.raises(SettingsError) as refused:
            SettingsStore(home).read()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused.value.problems == [f"{home.settings_file}:1: over 1024 KiB, more than remem parses"]
    assert peak < 1024 * 1024, peak
