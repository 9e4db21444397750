"""The `long` case is padded to the limit the user sets, whatever it is, and a case whose session
cannot be written or read is that case's failure, not the run's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.evaluation import formats, harness
from remem.daemon.evaluation.cases import CWD, LONG
from remem.daemon.evaluation.formats import DshFormat
from remem.daemon.home import Home
from remem.daemon.limits import SESSION_EVENTS_MAX, SESSION_LINE_MAX_BYTES
from tests.fake_openai import FakeOpenAI
from tests.scripted_model import serve

from .conftest import decision_read_as_broken
from .eval_command import remem

BROKEN = "line 3 is not JSON"


# 1.5 MB failed; SESSION_LINE_MAX_BYTES is the largest limit settings allow (a worker log holds
# the whole review input in one line).
@pytest.mark.slow
@pytest.mark.parametrize("max_input_bytes", [1_500_000, SESSION_LINE_MAX_BYTES])
def test_the_long_case_stays_within_the_readers_caps(tmp_path: Path, max_input_bytes: int) -> None:
    """Past about 1.1 MB the padding's small turns held more events than remem reads in a log."""
    root = tmp_path / "sessions"
    root.mkdir()
    written = harness._write(LONG, DshFormat(CWD), root, tmp_path, max_input_bytes)
    assert written.events < SESSION_EVENTS_MAX  # and it was read back whole: no line over its cap
    assert 0.8 < written.size / max_input_bytes < 0.95, "about 85% of the limit, and under it"
    assert set(written.ranges) == {1, 2}, "a fact at each end"


def test_a_session_that_cannot_be_read_back_fails_its_case_not_the_run(
    user_home: Home, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    score = decision_read_as_broken(user_home, fake, monkeypatch, formats, BROKEN)
    assert (score.status, score.error) == (
        "unreadable",
        f"its session cannot be written as remem reads it: {BROKEN}",
    )
    assert score.missed == ["cache-sqlite"] and fake.count == 0


@pytest.mark.slow
def test_a_large_limit_is_measured(user_home: Home, fake: FakeOpenAI) -> None:
    """At 1.5 MB the run ended in "internal error" (exit 4), every finished case's result lost."""
    serve(fake, "good")
    user_home.settings_file.write_text(user_home.settings_file.read_text().replace("32768", "1500000"))
    done = remem(user_home, "--cases", "dsh/[dl]*", "--json")
    assert done.returncode == 0, done.stderr
    cases = {case["score"]["case"]: case for case in json.loads(done.stdout)["cases"]}
    assert [cases[name]["score"]["status"] for name in ("decision", "long", "low-information")] == [
        "committed",
        "committed",
        "no-change",
    ]
    assert cases["long"]["metrics"]["recall"] == 1.0
