"""A file in the receipts' folder whose name is not UTF-8 is no receipt (remem names each by its
review id): `remem receipts` lists every receipt and passes it over, saying so in one error of
the folder that counts such files, UTF-8 ones a receipt could be taken for too, and names them,
their bytes escaped (it was silent). Its raw name failed the daemon's answer as a bug (exit 4),
and `--no-daemon` printed it with the surrogates Python keeps such bytes as; both are run here
as the real `remem` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from tests.test_cli_receipts_order import reviewed


def _remem(home: Home, *args: str, daemon: bool) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != NO_DAEMON_ENV}
    env.update({} if daemon else {NO_DAEMON_ENV: "1"})
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args],
        capture_output=True, text=True, errors="backslashreplace", env=env, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("daemon", [True, False], ids=["daemon", "no-daemon"])
def test_a_file_named_not_utf8_is_no_receipt(home: Home, daemon: bool) -> None:
    reviewed(home, "session-kept", "a", "2026-01-01T00:00:00Z")
    folder = home.root / "memory" / "reviews"
    try:
        (folder / os.fsdecode(b"\xff.md")).symlink_to("/etc/hostname")
        (folder / os.fsdecode(b"b\xfe.md")).write_text("junk")
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    try:
        done = _remem(home, "receipts", "--json", daemon=daemon)
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        [error] = answer["errors"]
        assert (error["path"], error["kind"]) == (str(folder), "reviews"), error
        assert error["message"].startswith(
            "2 file(s) not named as remem names a receipt (\\xff.md, b\\xfe.md)"
        )
        assert [r["source"]["session"] for r in answer["receipts"]] == ["session-kept"]
        text = _remem(home, "receipts", daemon=daemon)
        assert text.returncode == 0, text.stderr
        assert "\\udc" not in text.stdout + text.stderr  # no surrogate written out as such
        assert "2 file(s) not named as remem names a receipt" in text.stderr
    finally:
        if daemon:
            assert _remem(home, "daemon", "stop", daemon=True).returncode == 0


def test_files_named_not_utf8_are_not_counted_as_unreadable_receipts(home: Home) -> None:
    """`remem receipts` counted the one error saying such files as an unreadable receipt: a
    folder of one receipt and two such files ended `1 receipt(s), 1 unreadable`. They are no
    receipts, and that error counts them itself; damaged receipts are still counted each."""
    reviewed(home, "session-kept", "a", "2026-01-01T00:00:00Z")
    folder = home.root / "memory" / "reviews"
    for review in "bc":
        (folder / f"{review * 64}.md").write_text("---\nnot: [valid\n")
    try:
        for name in (b"a\xff.md", b"b\xfe.md"):
            (folder / os.fsdecode(name)).touch()
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    text = _remem(home, "receipts", daemon=False)
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[-1] == "1 receipt(s), 2 unreadable", text.stdout
    assert "2 file(s) not named as remem names a receipt (a\\xff.md, b\\xfe.md)" in text.stderr


@pytest.mark.parametrize("daemon", [True, False], ids=["daemon", "no-daemon"])
def test_only_names_a_receipt_could_have_are_said_utf8_or_not(home: Home, daemon: bool) -> None:
    """A Markdown file that is no dotfile, which could be taken for a receipt, is said whether its
    name is UTF-8 or not: `c\\xff.md` was said and a `notes.md`, or a receipt renamed by hand,
    passed over in silence, so a user looking for a review in `remem receipts` was not told why
    it was missing. Other names (`z\\xff.txt`, `notes.txt`, an editor's `.#a.md` lock) are not."""
    reviewed(home, "session-kept", "a", "2026-01-01T00:00:00Z")
    folder = home.root / "memory" / "reviews"
    for name in ("notes.md", f"{'b' * 64} (copy).md", "notes.txt", ".#a.md"):
        (folder / name).touch()
    try:
        for raw in (b"z\xff.txt", b".#\xfe.md", b"c\xff.md"):
            (folder / os.fsdecode(raw)).touch()
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    try:
        done = _remem(home, "receipts", "--json", daemon=daemon)
    finally:
        if daemon:
            assert _remem(home, "daemon", "stop", daemon=True).returncode == 0
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    [error] = answer["errors"]
    named = f"{'b' * 64} (copy).md, c\\xff.md, notes.md"
    assert error["message"].startswith(f"3 file(s) not named as remem names a receipt ({named}) "), error
    assert [r["source"]["session"] for r in answer["receipts"]] == ["session-kept"]
