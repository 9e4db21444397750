"""`remem eval` as a user (and CI) runs it: the real CLI in its own process, the scripted model over HTTP."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI, hang, status
from tests.scripted_model import serve
from tests.sessions.factory import ScriptedTurn, build_scripted_session, write_session

from .conftest import KEY_ENV
from .eval_command import eval_command, eval_env, remem

pytestmark = pytest.mark.slow  # `remem eval` runs the whole labelled set in processes: 10-30 s each
MARKER = "private-marker-7f3a"


def test_eval_measures_the_harness_and_says_so(user_home: Home, fake: FakeOpenAI, tmp_path: Path) -> None:
    # The user's own session and memory must stay out of it: a root with a session to tempt it.
    root = tmp_path / "user-sessions"
    mine = build_scripted_session([ScriptedTurn(f"my secret plan {MARKER}", "ok")], seed=5, cwd=str(tmp_path))
    write_session(root, mine)
    with user_home.settings_file.open("a") as settings:
        settings.write(f"sessions:\n  roots: [{str(root)!r}]\n")
    serve(fake, "good")
    done = remem(user_home, "--scripted-model", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["subject"] == "scripted-model" and report["provider"] == "fake"
    totals = report["totals"]
    assert [totals[k] for k in ("recall", "precision", "evidence", "deletes", "outcome")] == [1.0] * 5
    assert (totals["noise"], totals["secrets"], totals["invalid"], totals["undecided"]) == (0, 0, 0, 0)
    assert {c["score"]["case"] for c in report["cases"]} >= {"secrets", "long", "empty", "correction"}
    assert all(MARKER not in json.dumps(body) for body in fake.requests)
    assert not list(user_home.reviews.iterdir()) and not list(user_home.workspaces.iterdir())

    text = remem(user_home, "--scripted-model", "--cases", "dsh/sec*")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].split()[:3] == ["case", "status", "recall"]
    assert any(line.startswith("dsh/secrets  committed") for line in lines)
    assert "Measured the harness against a scripted model (not a real model)" in text.stdout
    assert "remem eval" not in text.stderr, "no progress bar without a terminal"


def test_a_leaking_model_fails_the_run(user_home: Home, fake: FakeOpenAI) -> None:
    serve(fake, "bad")
    done = remem(user_home, "--cases", "secrets")
    assert done.returncode == 1
    assert "Measured fake/scripted" in done.stdout and "1 secret(s) stored" in done.stdout


def test_refusals_name_what_to_fix(user_home: Home, fake: FakeOpenAI) -> None:
    missing = remem(user_home, key=None)
    assert missing.returncode == 2 and KEY_ENV in missing.stderr and fake.count == 0
    wrong = remem(user_home, "--cases", "decision", key="sk-wrong")
    assert wrong.returncode == 1 and "dsh/decision  provider-failed" in wrong.stdout
    assert "the provider refused the API key (HTTP 401" in wrong.stdout and "sk-wrong" not in wrong.stdout
    nothing = remem(user_home, "--cases", "nope*")
    assert nothing.returncode == 2 and "The formats are dsh; the cases are " in nothing.stderr
    assert "secrets" in nothing.stderr.split("the cases are ", 1)[1], nothing.stderr
    unknown = remem(user_home, "--provider", "nowhere")
    assert (
        unknown.returncode == 2 and "--provider nowhere is not a provider of your settings" in unknown.stderr
    )
    assert (
        "anthropic, deepseek, fake, ollama, openai" in unknown.stderr
        and "evaluated settings" not in unknown.stderr
    )


def test_a_failing_route_is_not_reported_as_the_models_figures(user_home: Home, fake: FakeOpenAI) -> None:
    """A provider down (or a wrong key, a timeout) made every case's zeros read as the model's."""
    fake.reply_always(lambda body: status(500, "overloaded"))
    text = remem(user_home, "--cases", "dsh/[de]*")
    assert text.returncode == 1  # a script running it must not take the figures for the model's
    assert "Warning: 1 of 2 case(s) ended before the model decided them (1 provider-failed;" in text.stdout
    assert "these figures do not measure the model until that cause is fixed" in text.stdout
    # The error has commas of its own: a semicolon ends it before what the grade found.
    assert (
        "  dsh/decision: the provider failed on its side (HTTP 500 internal server error, asked "
        in text.stdout
    )
    assert "or see that server's log — overloaded; missed cache-sqlite\n" in text.stdout
    report = json.loads(remem(user_home, "--cases", "dsh/[de]*", "--json").stdout)
    assert report["totals"]["undecided"] == 1
    assert [c["metrics"]["undecided"] for c in report["cases"]] == [1, 0]  # decision, then empty


def test_the_key_may_come_from_the_users_credentials_file(user_home: Home, fake: FakeOpenAI) -> None:
    user_home.credentials_file.write_text("providers:\n  fake:\n    api_key: sk-test\n")
    user_home.credentials_file.chmod(0o600)
    serve(fake, "good")
    done = remem(user_home, "--cases", "decision", "--json", key=None)
    assert done.returncode == 0, done.stderr
    [case] = json.loads(done.stdout)["cases"]
    assert case["score"]["status"] == "committed" and case["metrics"]["recall"] == 1.0


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_ctrl_c_stops_the_run_with_no_report(
    user_home: Home, fake: FakeOpenAI, tmp_path: Path, stop: signal.Signals
) -> None:
    """Ctrl-C, and a terminal closed or a `kill`: each case's temporary home, which holds a
    copy of the evaluated settings, is removed, not left in the temp dir."""
    # A short timeout: without the fix the other cases would time out and a report follow.
    text = user_home.settings_file.read_text()
    user_home.settings_file.write_text(
        text.replace("  max_input_bytes:", "  timeout_seconds: 3\n  max_input_bytes:")
    )
    fake.reply_always(lambda body: hang())
    temp = tmp_path / "temp"
    temp.mkdir()
    command = eval_command(user_home, "--cases", "dsh/[cd]*", "--json")
    with subprocess.Popen(command, env=eval_env(TMPDIR=str(temp)), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as run:  # fmt: skip
        deadline = time.monotonic() + 60
        while fake.count == 0 and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # until the first case waits on the model
        assert fake.count == 1, "the first case never asked the model"
        run.send_signal(stop)
        out, err = run.communicate(timeout=60)  # a hang guard, not a speed assertion
    assert run.returncode == 128 + stop, err
    assert out == "" and "interrupted after 0 of 4 case(s); no report" in err
    assert fake.count == 1, "no case ran after Ctrl-C"
    assert not list(temp.glob("remem-eval-*"))
