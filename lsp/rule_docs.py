"""Where each diagnostic rule is documented: a link to its row of docs/memory-format.md.

The editor shows a diagnostic as `remem(type-invalid)` and links the code to `codeDescription`:
the row of the rule's table in the checkout's docs (`file://…/memory-format.md#L<line>`, which
VS Code opens at that line). An installed package without the docs links nothing.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

RULES_DOC = Path(__file__).resolve().parents[1] / "docs" / "memory-format.md"
PREFIX = "remem/"
_CODES = re.compile(r"`(remem/[a-z0-9-]+|-[a-z0-9-]+)`")


@cache
def _rows() -> dict[str, int]:
    """Each rule code (without the prefix) to the 1-based line of its table row."""
    try:
        lines = RULES_DOC.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    rows: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.startswith("|"):
            continue
        stem = ""
        for found in _CODES.findall(line):
            # "`remem/description-empty`, `-multiline`" names description-multiline too.
            code = found.removeprefix(PREFIX) if found.startswith(PREFIX) else stem + found
            stem = code.rsplit("-", 1)[0] if found.startswith(PREFIX) else stem
            rows.setdefault(code, number)
    return rows


def rule_href(code: str) -> str | None:
    """The documentation of rule `code` (`remem/type-invalid` or `type-invalid`), if known."""
    line = _rows().get(code.removeprefix(PREFIX))
    return None if line is None else f"{RULES_DOC.as_uri()}#L{line}"
