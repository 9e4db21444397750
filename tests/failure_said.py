"""What a failed `remem` command said, whether it was given `--json` or not."""

from __future__ import annotations

import json


def failure_line(out: str, err: str, *, as_json: bool) -> str:
    """The line a person reads (`remem: message`): without `--json` its stderr; with it, its
    JSON error on stdout, which is then all it wrote (its stderr stays empty). A failure said
    as text although `--json` was given fails here: its stdout is no JSON, its stderr not empty."""
    if not as_json:
        return err
    assert err == "", err
    return f"remem: {json.loads(out)['error']['message']}\n"
