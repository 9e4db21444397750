"""Every rule the validator reports links to its own row of docs/memory-format.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from remem.lsp.rule_docs import RULES_DOC, rule_href

ROOT = Path(__file__).resolve().parents[2]


def reported_codes() -> set[str]:
    """The codes the validators and the language server pass to `diagnostic(...)`, read from
    their source."""
    found: set[str] = set()
    for source in [*(ROOT / "daemon" / "memory").glob("*.py"), *(ROOT / "lsp").rglob("*.py")]:
        found |= set(re.findall(r'diagnostic\(\s*"([a-z0-9-]+)"', source.read_text()))
    return found


@pytest.mark.parametrize("code", sorted(reported_codes()))
def test_each_rule_links_to_the_row_that_names_it(code: str) -> None:
    href = rule_href(f"remem/{code}")
    assert href is not None, f"remem/{code} is in no row of {RULES_DOC.name}"
    doc, line = href.split("#L")
    assert doc == RULES_DOC.as_uri()
    row = RULES_DOC.read_text().splitlines()[int(line) - 1]
    suffix = code.rsplit("-", 1)[-1]
    assert f"remem/{code}`" in row or f"-{suffix}`" in row, row
    assert rule_href(code) == href  # with or without the prefix


def test_an_unknown_code_links_nothing() -> None:
    assert rule_href("remem/no-such-rule") is None
