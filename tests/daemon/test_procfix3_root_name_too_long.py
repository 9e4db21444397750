"""A configured session root whose folders cannot be looked for for another reason than that
none is there or it cannot be searched (a name too long here; an I/O error alike) is a root its
listing says unreadable, and why, the other roots listed: taken as a root with no folder, the
daemon met the error again where it asked whether the folder was there, and every listing
failed as a bug of remem's (exit 4)."""

from __future__ import annotations

import json
from pathlib import Path

from remem.daemon.home import Home
from tests.sessions.factory import SessionSpec, build_session, write_session

from .capped_log import remem_logging_capped


def test_a_root_whose_name_is_too_long_is_said_unreadable_and_the_others_listed(
    home: Home, tmp_path: Path
) -> None:
    sound, long = tmp_path / "sound", tmp_path / ("x" * 300)  # a name is 255 bytes at most
    sound.mkdir()
    write_session(sound, build_session(SessionSpec(seed=1, turns=2)))
    roots = "".join(f"\n    - {json.dumps(str(root))}" for root in (sound, long))
    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\nsessions:\n  roots:{roots}\n")
    try:
        listed = remem_logging_capped(home, "sessions", "list")
        assert listed.returncode == 0, listed.stderr  # "the daemon failed on sessions/list, a bug"
        said = listed.stderr + listed.stdout
        assert "1 session(s), 1 unreadable" in said, said
        assert "session root cannot be looked into (File name too long)" in said, said
    finally:
        remem_logging_capped(home, "daemon", "stop")


def test_a_listing_of_only_such_a_root_says_where_it_looked(home: Home, tmp_path: Path) -> None:
    """Nothing listed: the client says where it looked, and asked each folder whether it is one
    (`Path.is_dir` raised the name's error there: "internal error, a bug in remem")."""
    long = tmp_path / ("x" * 300)
    home.settings_file.write_text(
        f"daemon:\n  idle_minutes: 2\nsessions:\n  roots:\n    - {json.dumps(str(long))}\n"
    )
    try:
        listed = remem_logging_capped(home, "sessions", "list")
        assert listed.returncode == 0, listed.stderr
        assert "session root cannot be looked into (File name too long)" in listed.stderr, listed.stderr
        # Said unreadable above, so not called "not found" among the folders looked in.
        assert f"  {long}\n" in listed.stderr, listed.stderr
    finally:
        remem_logging_capped(home, "daemon", "stop")
