"""`remem eval --cases` matching nothing names what it can match, from the set itself: the
formats the cases are written in and the cases' names (it named every case as `dsh/…`, whatever
the formats were)."""

from __future__ import annotations

import subprocess
import sys

from remem.daemon.evaluation.cases import CASES
from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI

from .eval_command import eval_env

# `remem` with one more format in the set (a Claude Code generator, say, once one is written).
_WITH_ANOTHER_FORMAT = (
    "import sys\n"
    "from remem.daemon.evaluation import formats\n"
    "formats.FORMATS['claude-code'] = formats.DshFormat\n"
    "from remem.daemon.cli import main\n"
    "sys.argv = ['remem', *sys.argv[1:]]\n"
    "main()\n"
)


def test_no_match_names_the_formats_and_the_cases(user_home: Home, fake: FakeOpenAI) -> None:
    command = [sys.executable, "-c", _WITH_ANOTHER_FORMAT, "--home", str(user_home.root), "--no-daemon"]
    done = subprocess.run(
        [*command, "eval", "--cases", "nothing-*"],
        env=eval_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    names = ", ".join(case.name for case in CASES)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "remem: no case matches 'nothing-*'; --cases matches a case's name or its id, format/name "
        f"(e.g. dsh/{CASES[0].name}). The formats are dsh, claude-code; the cases are {names}\n"
    )
    assert fake.count == 0
