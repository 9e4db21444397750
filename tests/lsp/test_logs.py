"""A refusal is one log line, a crash keeps its traceback, and neither repeats the params."""

from __future__ import annotations

import logging

import pytest
from pygls.exceptions import JsonRpcServerError

from remem.lsp.logs import quiet_refusals

PYGLS = logging.getLogger("pygls.protocol.json_rpc")


def logged(caplog: pytest.LogCaptureFixture, error: Exception, *how: object) -> str:
    """What the log shows for pygls logging `error` the way it does (in its except block)."""
    quiet_refusals()
    caplog.clear()
    try:
        raise error
    except Exception:
        PYGLS.exception(*how)  # type: ignore[arg-type]
    return "\n".join(caplog.handler.format(r) for r in caplog.records)


def test_a_refusal_is_one_line_without_params(caplog: pytest.LogCaptureFixture) -> None:
    refusal = JsonRpcServerError("no API key for provider `openai`: set OPENAI_API_KEY", -32013)
    params = {"command": "remem.lsp.setApiKey", "arguments": [{"apiKey": "sk-secret"}]}
    text = logged(caplog, refusal, "Failed to handle request %s %s %s", 7, "workspace/executeCommand", params)
    said = "no API key for provider `openai`: set OPENAI_API_KEY"
    assert text.endswith(f"workspace/executeCommand refused: {said}")
    assert "\n" not in text and "Traceback" not in text and "sk-secret" not in text
    answered = logged(caplog, refusal, 'Exception occurred for message "%s"', 9)
    assert answered.endswith(f"request 9 refused: {said}")


def test_a_crash_keeps_its_traceback_but_not_the_params(caplog: pytest.LogCaptureFixture) -> None:
    params = {"arguments": [{"apiKey": "sk-secret"}]}
    text = logged(caplog, KeyError("boom"), "Failed to handle request %s %s %s", 7, "remem/x", params)
    assert "Traceback" in text and "KeyError: 'boom'" in text and "sk-secret" not in text
