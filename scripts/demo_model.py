"""The demo's scripted consolidation model: a stand-in on 127.0.0.1, not a real model.

It knows one conversation, the demo's main session (`DEMO_TURNS`, which scripts/seed_demo.py
writes), and answers every review the way a good model would answer that session: a `feedback`
record for the preference the user states and a `project` record for the fact they state, each
citing the turn it was said in, exactly as the review shows it. A review that shows neither turn
(another session) gets `no-change`. It speaks just enough of the OpenAI chat-completions API for
remem's real client, answers only requests bearing the key the demo put in `KEY_ENV`, and
prints its base URL as its first line of output.

    python -m scripts.demo_model      # serves until SIGTERM or Ctrl-C
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from remem.daemon.consolidation.evidence import shown_turns
from remem.daemon.consolidation.proposal import TOOL_NAME
from remem.daemon.consolidation.route import DEMO_KEY_ENV
from remem.daemon.sessions.scripted import ScriptedTool, ScriptedTurn, ToolOutput

PROVIDER = "demo"
MODEL = "remem-demo-scripted"
KEY_ENV = DEMO_KEY_ENV  # named by the route, which says what to do once the demo has ended

_FACT = ScriptedTurn(
    "Right, the gateway cuts every request off at 30 seconds and ops won't raise it, so anything "
    "slow has to stream or become a background job. Let's stream it.",
    "The export now streams: `export_csv` yields the header and then one row at a time, so the "
    "first bytes leave within a second and the gateway's limit no longer applies.",
    (
        ScriptedTool("edit_file", {"path": "api/reports/export.py"}, ToolOutput("Applied 1 edit (+18 -9).")),
        ScriptedTool(
            "run_command", {"command": "pytest tests/test_export.py -q"}, ToolOutput("5 passed in 1.2s")
        ),
    ),
)
_PREFERENCE = ScriptedTurn(
    "Please don't pull in pandas for the chunking. In this repo I want the standard library "
    "unless there's really no other way: every new dependency has to be vetted for our "
    "air-gapped installs.",
    "Understood. I dropped the pandas draft; the chunks come from `csv.writer` over a generator "
    "and `pyproject.toml` is unchanged.",
    (ScriptedTool("edit_file", {"path": "api/reports/export.py"}, ToolOutput("Applied 1 edit (+6 -11).")),),
)
DEMO_TURNS = (
    ScriptedTurn(
        "The quarterly report export returns a 504 for the big customers. Can you find out why?",
        "`export_csv` loads every row with `fetch_all` before it writes the first byte. The "
        "quarterly report of a big customer is about two million rows, so nothing is sent for "
        "over a minute and the request is cut off before the response starts.",
        (
            ScriptedTool(
                "read_file",
                {"path": "api/reports/export.py"},
                ToolOutput("def export_csv(report_id):\n    rows = db.fetch_all(report_id)\n    ..."),
            ),
            ScriptedTool(
                "run_command",
                {"command": "pytest tests/test_export.py -q"},
                ToolOutput("4 passed in 0.9s"),
            ),
        ),
    ),
    _FACT,
    _PREFERENCE,
    ScriptedTurn(
        "Looks good. Run the export tests once more and sum up.",
        "All 5 export tests pass. The export streams in chunks of 10,000 rows with the standard "
        "library only; the big quarterly report starts downloading in under a second.",
        (
            ScriptedTool(
                "run_command", {"command": "pytest tests/test_export.py -q"}, ToolOutput("5 passed in 1.1s")
            ),
        ),
    ),
)

_LEARNT = (
    (
        _PREFERENCE,
        {
            "name": "standard-library-first",
            "description": "Use the standard library; ask before adding any dependency",
            "type": "feedback",
            "content": "Solve things with the standard library unless there is really no other way, "
            "and ask before adding a dependency.\n\nWhy: every new dependency has to be vetted for "
            "the air-gapped installs.\n\nApplies to every change that would touch the dependencies.\n",
        },
    ),
    (
        _FACT,
        {
            "name": "gateway-30-second-limit",
            "description": "The API gateway cuts every request off at 30 seconds",
            "type": "project",
            "content": "The gateway ends any request after 30 seconds and ops will not raise the "
            "limit, so a slow endpoint must stream its response or run as a background job.\n",
        },
    ),
)


def proposal(review: str) -> dict[str, Any]:
    """The demo model's final proposal for the review text `review` (the request's user message)."""
    shown = shown_turns(review)
    changes = []
    for turn, record in _LEARNT:
        quote = "\n> " + turn.user.splitlines()[0][:40]
        cited = [shown_range.model_dump() for shown_range, text in shown if quote in text]
        if cited:
            changes.append({"action": "put", "record": record, "evidence": cited})
    return {"final": True, "outcome": "changes" if changes else "no-change", "changes": changes}


def completion(body: dict[str, Any]) -> dict[str, Any]:
    """A chat completion whose one tool call carries `proposal` for the request `body`."""
    messages = body.get("messages") or []
    review = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    call = {"name": TOOL_NAME, "arguments": json.dumps(proposal(review))}
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_demo", "type": "function", "function": call}],
    }
    return {
        "id": "chatcmpl-demo",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls", "logprobs": None}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"demo model: no route {self.path}"}})
        elif self.headers.get("Authorization") != f"Bearer {self.server.key}":
            self._send(401, {"error": {"message": f"demo model: the key is not ${KEY_ENV}"}})
        else:
            try:
                self._send(200, completion(json.loads(raw)))
            except (ValueError, AttributeError) as exc:
                self._send(400, {"error": {"message": f"demo model: not a chat request: {exc}"}})

    def _send(self, code: int, body: dict[str, Any]) -> None:
        payload = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        pass  # the demo's output is the walkthrough


class _Server(HTTPServer):
    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(("127.0.0.1", 0), _Handler)


def main() -> int:
    key = os.environ.get(KEY_ENV)
    if not key:
        print(f"scripts.demo_model: set {KEY_ENV} to the key its clients will send", file=sys.stderr)
        return 2
    server = _Server(key)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"http://127.0.0.1:{server.server_port}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
