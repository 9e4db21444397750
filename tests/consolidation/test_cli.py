"""`remem consolidate`, `remem receipts` and `remem settings model` as a user runs them."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.cli.backend import NO_DAEMON_ENV, Backend
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from remem.daemon.protocol.rpc import ModelsParams, RpcError, SelectModelParams, SetApiKeyParams
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI, status, tool_call

from .conftest import KEY_ENV, OLD, Source, proposal, put


def run(home: Home, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home.root), *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_consolidate_shows_progress_and_the_outcome(home: Home, fake: FakeOpenAI, source: Source) -> None:
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    code, out, err = run(home, "consolidate", source.id)
    assert code == 0 and out.startswith("committed, 1 change(s) — review ")
    assert "… reading the session and the memory it is reviewed against\n" in err
    assert "… waiting for the model (step 1)" in err and "… committing to memory" in err
    code, out, _ = run(home, "consolidate", source.id, "--json")
    assert code == 0 and json.loads(out)["status"] == "committed" and fake.count == 1
    code, out, _ = run(home, "receipts", "--json")
    [receipt] = json.loads(out)["receipts"]
    assert receipt["source"]["session"] == source.id and receipt["changes"][0]["name"] == "prefer-uv"
    code, out, _ = run(home, "receipts", "--session", "session-other")
    assert out.strip() == "0 receipt(s)"


def test_failures_and_refusals_have_their_exit_codes(home: Home, fake: FakeOpenAI, source: Source) -> None:
    fake.reply(status(401, "bad key"))
    code, out, _ = run(home, "consolidate", source.id, "--json")
    failed = json.loads(out)
    assert code == 1 and failed["status"] == "provider-failed"
    assert failed["reason"].startswith("the provider refused the API key (HTTP 401"), failed["reason"]
    code, out, _ = run(home, "consolidate", "session-missing", "--json")
    missing = json.loads(out)["error"]
    assert code == 1 and missing["code"] == "NOT_FOUND"
    assert "read with `--root` is consolidated once its root is under sessions.roots" in missing["message"]
    code, out, _ = run(home, "consolidate", source.id[:12], "--json")  # the beginning of an id
    partial = json.loads(out)["error"]
    assert code == 1 and "full id" in partial["message"] and "--root" not in partial["message"], partial
    fake.reply(status(401, "bad key"))  # a fresh attempt, told why it failed
    code, out, _ = run(home, "consolidate", source.id)
    assert (
        code == 1
        and out.startswith("provider-failed — review ")
        and ": the provider refused the API key" in out
    )
    code, out, _ = run(home, "receipts")
    assert "\n    the provider refused the API key" in out and "bad key" in out, out
    for empty in (("consolidate", ""), ("settings", "model", "--model", "")):
        code, out, err = run(home, *empty)
        assert code == 2 and "must not be empty" in err and "Traceback" not in err


def test_settings_model_says_where_the_key_must_come_from_when_none_is_found(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)
    code, out, _ = run(home, "settings", "model")
    assert code == 0 and f"no API key for provider `fake`: set the environment variable {KEY_ENV}" in out, out
    assert "(API key from" not in out
    monkeypatch.setenv(KEY_ENV, " ")  # exported empty: "set the variable" would read as done
    code, out, _ = run(home, "settings", "model")
    assert f"no API key for provider `fake`: {KEY_ENV} is set but empty; set it to the key, or add" in out, (
        out
    )


def test_settings_model_reads_and_selects_with_compare_and_swap(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    code, out, _ = run(home, "settings", "model", "--json")
    shown = json.loads(out)
    assert code == 0 and (shown["provider"], shown["model"], shown["apiKeyEnv"]) == (
        "fake",
        "fake-model",
        KEY_ENV,
    )
    assert {"deepseek", "openai", "ollama", "fake"} <= set(shown["providers"])
    code, out, _ = run(home, "settings", "model", "--provider", "ollama", "--model", "qwen3:8b")
    assert code == 0 and out.strip() == "ollama/qwen3:8b"
    assert (
        "provider: ollama" in home.settings_file.read_text() and "base_url" in home.settings_file.read_text()
    )
    code, out, err = run(home, "settings", "model", "--provider", "nowhere")
    assert code == 2 and "nowhere" in err
    # Only the provider given: remem knows no default model of fake, and ollama's is never its
    # (decision 0500, amended); deepseek is given its default, not ollama's model, and says so.
    code, out, err = run(home, "settings", "model", "--provider", "fake")
    assert code == 2 and "give --model" in err and "`qwen3:8b` is the one chosen for ollama" in err, err
    code, out, err = run(home, "settings", "model", "--provider", "deepseek")
    assert code == 0 and out.startswith("deepseek/deepseek-v4-flash"), out
    assert err.strip() == (
        "note: deepseek's default model `deepseek-v4-flash` was chosen, not `qwen3:8b`, the one chosen "
        "for ollama; give --model for another model of deepseek"
    )
    assert "model: deepseek-v4-flash" in home.settings_file.read_text()
    code, out, err = run(home, "settings", "model", "--provider", "fake", "--model", "fake-model")
    assert code == 0 and err == ""


def test_a_model_chosen_on_a_full_disk_is_refused_and_changes_nothing(home: Home, fake: FakeOpenAI) -> None:
    """The refused write was "a bug in remem", exit 4. The command runs under a file-size limit
    below the settings' size, so its write fails (EFBIG) as on a full disk."""
    assert run(home, "settings", "model", "--model", "m1")[0] == 0
    before = home.settings_file.read_bytes()
    chosen = subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "settings", "model", "--model=m2"],
        capture_output=True, text=True, timeout=60,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16)),
    )  # fmt: skip
    assert chosen.returncode == 1, chosen.stderr
    assert chosen.stderr.startswith(f"remem: {home.root} refused a write (File too large), so nothing"), (
        chosen.stderr
    )
    assert home.settings_file.read_bytes() == before
    assert [p.name for p in home.root.iterdir() if p.is_file()] == [home.settings_file.name]  # no temp


def test_models_chosen_at_once_are_each_chosen_not_refused_as_stale(home: Home, fake: FakeOpenAI) -> None:
    """The command read the revision itself: a file another `settings model` changed meanwhile
    is read again, never a "re-read and retry" to a user who gave no revision."""
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "settings", "model"]
    running = [
        subprocess.Popen(
            [*command, "--provider", "ollama", "--model", f"m{n}"], stderr=subprocess.PIPE, text=True
        )
        for n in range(12)
    ]
    ended = [(process.wait(60), process.stderr.read() if process.stderr else "") for process in running]
    assert all(code == 0 for code, _ in ended), ended
    code, out, _ = run(home, "settings", "model", "--json")
    assert json.loads(out)["model"] in {f"m{n}" for n in range(12)}


def test_an_invalid_settings_file_is_a_refusal_naming_the_key_and_line(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    text = home.settings_file.read_text()
    home.settings_file.write_text(text.replace("timeout_seconds: 20", "timeout_second: 20"))
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "timeout_seconds" in row)
    code, _, err = run(home, "consolidate", source.id)
    assert code == 2 and "Traceback" not in err
    assert err.startswith(f"remem: INVALID: settings.yml is invalid: {home.settings_file}:{line}: ")
    assert "consolidation.timeout_second: unknown key" in err and fake.count == 0
    code, out, _ = run(home, "receipts")
    assert out.strip() == "0 receipt(s)", "a refusal leaves no receipt"


@pytest.mark.parametrize(
    "asked",
    [
        SelectModelParams(provider="fake", model="other", expectedRevision="sha256:" + "0" * 64),
        SetApiKeyParams(provider="fake", apiKey="sk-abc"),
        ModelsParams(provider="fake"),
    ],
    ids=["select a model", "set an API key", "list models"],
)
def test_an_invalid_settings_file_refuses_the_model_settings_naming_the_key(
    home: Home, source: Source, asked: object
) -> None:
    text = home.settings_file.read_text()
    home.settings_file.write_text(text.replace("timeout_seconds: 20", "timeout_seconds: soon"))
    api = Backend(home, use_daemon=False).api()
    call = {SelectModelParams: api.select_model, SetApiKeyParams: api.set_api_key, ModelsParams: api.models}
    with pytest.raises(RpcError) as caught:
        call[type(asked)](asked)  # type: ignore[index, operator]
    assert caught.value.data == {"code": "INVALID"}
    assert (
        caught.value.message.startswith("settings.yml is invalid: ")
        and "timeout_seconds" in caught.value.message
    )


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("status: [broken", "not a valid receipt (while parsing a flow sequence"),
        ("status: 42", "not a valid receipt (status: Input should be "),
    ],
)
def test_a_damaged_receipt_is_reported_and_refuses_its_review(
    home: Home, fake: FakeOpenAI, source: Source, damage: str, said: str
) -> None:
    """Said in one line, the field and its fault: pydantic's own text spans lines and links
    to its documentation."""
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    _, out, _ = run(home, "consolidate", source.id, "--json")
    path = home.root / "memory" / "reviews" / f"{json.loads(out)['review']}.md"
    path.write_text(path.read_text().replace("status: committed", damage, 1))
    code, out, _ = run(home, "receipts", "--json")
    listed = json.loads(out)
    assert code == 0 and listed["receipts"] == [] and [e["path"] for e in listed["errors"]] == [str(path)]
    message = listed["errors"][0]["message"]
    assert message.startswith(said) and "\n" not in message and "pydantic.dev" not in message, message
    code, out, err = run(home, "receipts")
    assert out == "0 receipt(s), 1 unreadable\n" and err.startswith(
        f"error: {path}: not a valid receipt ("
    ), err
    code, _, err = run(home, "consolidate", source.id)
    assert code == 1 and f"\nremem: UNREADABLE: {path}: not a valid receipt" in err and fake.count == 1
    assert "fix or remove it" in err and "Traceback" not in err


def test_a_damaged_session_is_unreadable_not_missing(home: Home, fake: FakeOpenAI, source: Source) -> None:
    data = bytearray(source.path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 2] = bytes(b ^ 0xFF for b in data[middle : middle + 2])
    source.path.write_bytes(bytes(data))
    os.utime(source.path, (OLD, OLD))
    code, _, err = run(home, "consolidate", source.id)
    assert code == 1 and f"remem: UNREADABLE: session {source.id} cannot be read: {source.path}: " in err
    assert fake.count == 0


def test_a_model_chosen_on_a_stale_revision_is_refused_in_one_sentence(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    stale = SelectModelParams(provider="fake", model="other", expectedRevision="sha256:" + "0" * 64)
    with pytest.raises(RpcError) as caught:
        Backend(home, use_daemon=False).api().select_model(stale)
    assert caught.value.data == {"code": "STALE_SETTINGS"}
    message = caught.value.message
    assert message.count("changed meanwhile") == 1 and message.endswith("re-read and retry"), message


def test_receipts_say_which_changes_were_written_and_which_only_proposed(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    assert run(home, "consolidate", source.id)[0] == 0
    store = ReceiptStore(home)
    [committed] = store.all()
    # The same proposal, not committed: the session changed while the model answered.
    store.write(committed.model_copy(update={"review": "f" * 64, "status": Status.SOURCE_CHANGED}))
    code, out, _ = run(home, "receipts")
    rows = {line.split()[1]: line for line in out.splitlines() if line.startswith("20")}
    assert code == 0 and "  changes: prefer-uv  " in rows["committed"], out
    assert "  proposed, not committed: prefer-uv  " in rows["source-changed"], out


@pytest.mark.slow
def test_a_key_this_shell_has_and_the_daemon_lacks_is_said_with_the_remedy(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon reads the environment it was started in: a key exported since, in this
    shell, is not its key. The refusal says so, and how to get the daemon this environment."""
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    monkeypatch.delenv(KEY_ENV)
    try:
        assert remem(home, "daemon", "start").returncode == 0  # started without the key
        monkeypatch.setenv(KEY_ENV, "sk-test")
        refused = remem(home, "consolidate", source.id)
        remedy = (
            f"this shell has ${KEY_ENV} set, but the daemon was started without it: run `remem daemon stop`"
        )
        assert (
            refused.returncode == 2 and "NO_ROUTE: no API key" in refused.stderr and remedy in refused.stderr
        )
        assert remedy in remem(home, "settings", "model").stdout
        assert remem(home, "daemon", "stop").returncode == 0
        assert (
            remem(home, "consolidate", source.id).returncode == 1 and fake.count == 1
        )  # now it asks the model
    finally:
        remem(home, "daemon", "stop")
