"""`docs/architecture.md`'s module table names every module of the three packages, and no other.

A row's first cell names modules in backticks: a path (`daemon/memory/store.py`), a package
whose modules it covers together (`daemon/cli/`), or a name in the folder of the path before it
(`models.py`, or `scanner` without its suffix).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("daemon", "lsp", "agents")
ENTRY_POINTS = ("__init__.py", "__main__.py")  # a package's docstring, `python -m`: not modules of the table


def named_in_table() -> tuple[set[str], set[str]]:
    """The module paths the table names, and the packages it names as a whole."""
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = doc[doc.index("## Modules") : doc.index("## Which process")]
    modules: set[str] = set()
    packages: set[str] = set()
    for row in (line for line in table.splitlines() if line.startswith("| `")):
        folder = ""
        for token in re.findall(r"`([^`]+)`", row.split("|")[1]):
            if token.endswith("/"):
                packages.add(token)
                folder = token
                continue
            if "/" in token:
                folder = token.rsplit("/", 1)[0] + "/"
            name = token if "/" in token else folder + token
            modules.add(name if name.endswith(".py") else f"{name}.py")
    return modules, packages


def test_the_module_table_names_every_module_and_only_modules_that_exist() -> None:
    modules, packages = named_in_table()
    present = {
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if path.name not in ENTRY_POINTS
    }
    assert len(present) > 100, "the walk must see the packages, or the test would hold vacuously"
    unnamed = sorted(m for m in present if m not in modules and not m.startswith(tuple(packages)))
    assert unnamed == [], "add these modules to docs/architecture.md's module table"
    assert sorted(m for m in modules if not (ROOT / m).is_file()) == [], "the table names missing modules"
    assert sorted(p for p in packages if not (ROOT / p).is_dir()) == [], "the table names missing packages"
