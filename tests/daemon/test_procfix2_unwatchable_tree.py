"""A folder tree nested past Python's recursion limit under a watched session root is the
tree's fault, not a bug of remem's: watchdog walks it recursively and raises `RecursionError`.

Found at the start, the daemon exited 4 at every spawn (every command failed); moved in while
it ran, watchdog's own thread died of it and no change was heard again, the daemon saying it
watched. Now the root is said failing in `daemon/status`, the daemon serves on, and the other
roots are heard (either backend)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from tests.sessions.factory import SessionSpec, build_session, write_session

from .helpers import remem, wait_until

DEPTH = 1100  # past the interpreter's recursion limit (1000)
NESTED = "a folder under it is nested deeper than can be watched"


def nest(top: Path) -> None:
    """`top` with DEPTH folders nested in it, made by descriptor (the path grows too long)."""
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    for _ in range(DEPTH):
        os.mkdir("d", dir_fd=fd)
        below = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = below
    os.close(fd)


def unnest(top: Path) -> None:
    """Remove what `nest` made, and anything put in it. `rm` walks without recursing, where
    `shutil.rmtree` (pytest's own clean-up too) fails on it with `RecursionError`."""
    subprocess.run(["rm", "-rf", "--", str(top)], check=True)


def configure(home: Home, watch: str, *roots: Path) -> None:
    listed = "".join(f"\n    - {str(root)!r}" for root in roots) or " []"
    home.settings_file.write_text(
        f"daemon:\n  idle_minutes: 2\n  watch: {watch}\nsessions:\n  roots:{listed}\n"
    )


def watch_status(home: Home) -> dict[str, object]:
    said = remem(home, "daemon", "status", "--json")
    assert said.returncode == 0, said.stderr
    return json.loads(said.stdout)["watch"]  # type: ignore[no-any-return]


def listed(home: Home) -> int:
    """How many sessions `remem sessions list` counts (its last line)."""
    said = remem(home, "sessions", "list")
    assert said.returncode == 0, said.stderr
    counted = next(line for line in said.stdout.splitlines() if " session(s), " in line)
    return int(counted.split()[0])


@pytest.mark.parametrize("watch", ["auto", "polling"])
def test_a_root_nested_too_deep_is_said_failing_and_the_daemon_serves(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: str
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    root = tmp_path / "dsh"
    root.mkdir()
    nest(root / "deep")
    configure(home, watch, root)
    try:
        # It exited 4 before it listened: "the remem daemon failed to start ... RecursionError".
        assert listed(home) == 0
        status = watch_status(home)
        assert status["backend"] == ("polling" if watch == "polling" else "inotify"), status
        assert f"session root {root} cannot be watched: {NESTED}" in str(status["reason"]), status
        assert str(root) not in status["paths"], status  # type: ignore[operator]
    finally:
        unnest(root / "deep")


@pytest.mark.parametrize("watch", ["auto", "polling"])
def test_a_tree_nested_too_deep_moved_in_leaves_the_other_roots_heard(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: str
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    struck, sound = tmp_path / "struck", tmp_path / "sound"
    struck.mkdir()
    sound.mkdir()
    aside = tmp_path / "deep"
    nest(aside)
    configure(home, watch, struck, sound)
    try:
        assert listed(home) == 0  # a listing the daemon keeps
        assert str(sound) in watch_status(home)["paths"]  # type: ignore[operator]
        aside.rename(struck / "deep")
        # Its thread died ("Exception in thread ... RecursionError"), the status said nothing.
        wait_until(lambda: NESTED in str(watch_status(home)["reason"]), what="the root said failing")
        status = watch_status(home)
        assert f"session root {struck} cannot be watched: {NESTED}" in str(status["reason"]), status
        wait_until(lambda: str(sound) in watch_status(home)["paths"], what="the sound root watched anew")  # type: ignore[operator]
        write_session(sound, build_session(SessionSpec(seed=1, turns=2)))
        wait_until(lambda: listed(home) == 1, what="the new session listed")
    finally:
        remem(home, "daemon", "stop")
        for top in (struck / "deep", aside):
            if top.exists():
                unnest(top)


@pytest.mark.parametrize("watch", ["auto", "polling"])
def test_a_memory_folder_nested_too_deep_is_said_failing_and_the_roots_are_heard(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: str
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    sound = tmp_path / "sound"
    sound.mkdir()
    configure(home, watch, sound)
    nest(home.memory / "deep")
    try:
        assert listed(home) == 0  # it exited 4 before it listened
        status = watch_status(home)
        # It was `off`, "failed: …/memory cannot be watched", no root watched.
        assert status["backend"] == ("polling" if watch == "polling" else "inotify"), status
        assert f"memory folder {home.memory} cannot be watched: {NESTED}" in str(status["reason"]), status
        assert str(sound) in status["paths"] and str(home.memory) not in status["paths"], status  # type: ignore[operator]
        write_session(sound, build_session(SessionSpec(seed=1, turns=2)))
        wait_until(lambda: listed(home) == 1, what="the new session listed")
    finally:
        remem(home, "daemon", "stop")
        unnest(home.memory / "deep")


@pytest.mark.parametrize("watch", ["auto", "polling"])
def test_a_tree_nested_too_deep_moved_into_memory_leaves_the_roots_heard(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: str
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    sound = tmp_path / "sound"
    sound.mkdir()
    aside = tmp_path / "deep"
    nest(aside)
    configure(home, watch, sound)
    try:
        assert listed(home) == 0  # a listing the daemon keeps
        assert str(home.memory) in watch_status(home)["paths"]  # type: ignore[operator]
        aside.rename(home.memory / "deep")
        # The memory folder's thread died, the new observer could not watch it and stopped: the
        # status still said every path watched, nothing was, the kept listing served for good.
        said = f"memory folder {home.memory} cannot be watched: {NESTED}"
        wait_until(lambda: said in str(watch_status(home)["reason"]), what="the memory folder said failing")
        status = watch_status(home)
        assert str(sound) in status["paths"] and str(home.memory) not in status["paths"], status  # type: ignore[operator]
        write_session(sound, build_session(SessionSpec(seed=1, turns=2)))
        wait_until(lambda: listed(home) == 1, what="the new session listed")
    finally:
        remem(home, "daemon", "stop")
        for top in (home.memory / "deep", aside):
            if top.exists():
                unnest(top)
