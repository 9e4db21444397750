"""`remem receipts --session ID` says a file of the receipts' folder not named as a receipt only
when it may be that session's receipt (decision 0547): a receipt renamed by hand is read for whose
it is, a note is none's, and a file that cannot be read (a link, never followed; a FIFO, never
waited on) or is a damaged receipt cannot be told, so it is said. The listing of one session said
every such file as its error, a `notes.md` and another session's renamed receipt alike. The whole
listing still says them all. Run as the real `remem`, with and without the daemon."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from tests.test_cli_receipts_order import reviewed


def _remem(home: Home, *args: str, daemon: bool) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != NO_DAEMON_ENV}
    env.update({} if daemon else {NO_DAEMON_ENV: "1"})
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


def _folder(home: Home, outside: Path) -> Path:
    """Receipts of sessions a and b, and beside them: b's receipt renamed by hand, a note, a
    damaged receipt, a FIFO and a link to a receipt of a outside the home."""
    reviewed(home, "session-a", "a", "2026-01-01T00:00:00Z")
    reviewed(home, "session-b", "b", "2026-02-01T00:00:00Z")
    folder = home.reviews
    shutil.copy(folder / f"{'b' * 64}.md", folder / "b-copy.md")
    (folder / "notes.md").write_text("# Notes\n\nWhat I think of the reviews.\n")
    (folder / "damaged.md").write_text("---\nnot: [valid\n---\n")
    os.mkfifo(folder / "pipe.md")
    outside.mkdir()
    shutil.copy(folder / f"{'a' * 64}.md", outside / "a.md")
    (folder / "link.md").symlink_to(outside / "a.md")
    return folder


def _said(done: subprocess.CompletedProcess[str]) -> str | None:
    """The files the one error of the folder names, as `--json` gives it."""
    assert done.returncode == 0, done.stderr
    errors = json.loads(done.stdout)["errors"]
    assert len(errors) <= 1, errors
    return errors[0]["message"].split(" (remem names")[0] if errors else None


@pytest.mark.parametrize("daemon", [True, False], ids=["daemon", "no-daemon"])
def test_a_sessions_listing_says_only_the_misnamed_files_that_may_be_its_receipts(
    home: Home, tmp_path: Path, daemon: bool
) -> None:
    folder = _folder(home, tmp_path / "outside")
    try:
        whole = _remem(home, "receipts", "--json", daemon=daemon)
        of_a = _remem(home, "receipts", "--json", "--session", "session-a", daemon=daemon)
        of_b = _remem(home, "receipts", "--json", "--session", "session-b", daemon=daemon)
        of_b_text = _remem(home, "receipts", "--session", "session-b", daemon=daemon)
        os.remove(folder / "damaged.md")
        os.remove(folder / "pipe.md")
        os.remove(folder / "link.md")
        of_a_text = _remem(home, "receipts", "--session", "session-a", daemon=daemon)
    finally:
        if daemon:
            assert _remem(home, "daemon", "stop", daemon=True).returncode == 0
    named = "not named as remem names a receipt"
    assert _said(whole) == f"5 file(s) {named} (b-copy.md, damaged.md, link.md and 2 more) are no receipts"
    assert _said(of_a) == f"3 file(s) {named} (damaged.md, link.md, pipe.md) are no receipts"
    assert _said(of_b) == f"4 file(s) {named} (b-copy.md, damaged.md, link.md and 1 more) are no receipts"
    assert [r["source"]["session"] for r in json.loads(of_b.stdout)["receipts"]] == ["session-b"]
    assert "4 file(s) not named as remem names a receipt" in of_b_text.stderr, of_b_text.stderr
    # With only b's renamed receipt and a note beside them, a's listing has nothing to say of them.
    assert of_a_text.returncode == 0 and of_a_text.stderr == "", of_a_text.stderr
    assert of_a_text.stdout.splitlines()[-1] == "1 receipt(s)", of_a_text.stdout
    assert (tmp_path / "outside" / "a.md").read_text().startswith("---\n")  # left as it was


def test_a_renamed_receipt_with_crlf_lines_or_a_bom_may_be_any_sessions(home: Home) -> None:
    """A receipt an editor saved with CRLF line endings, or with a UTF-8 BOM before its `---`, is
    no note: remem cannot read its front matter, so it may be the session's and is said. Either
    was taken for a note and passed over in silence by every session's listing."""
    reviewed(home, "session-a", "a", "2026-01-01T00:00:00Z")
    reviewed(home, "session-b", "b", "2026-02-01T00:00:00Z")
    text = (home.reviews / f"{'b' * 64}.md").read_text()
    (home.reviews / "b-crlf.md").write_bytes(text.replace("\n", "\r\n").encode())
    (home.reviews / "b-bom.md").write_bytes(b"\xef\xbb\xbf" + text.encode())
    (home.reviews / "notes.md").write_text("# Notes\r\n\r\nStill a note.\r\n")

    of_a = _remem(home, "receipts", "--json", "--session", "session-a", daemon=False)

    named = "not named as remem names a receipt"
    assert _said(of_a) == f"2 file(s) {named} (b-bom.md, b-crlf.md) are no receipts"
