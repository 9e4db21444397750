"""What a failed `remem` command said, whether it was given `--json` or not."""

from __future__ import annotations

import json


def failure_line(out: str, err: str) -> str:
    """The line a person reads (`remem: message`): its stderr, or, when the command was given
    `--json`, its JSON error, which is then all it wrote (its stderr stays empty)."""
    if not out:
        return err
    assert err == "", err
    return f"remem: {json.loads(out)['error']['message']}\n"
