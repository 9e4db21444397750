"""The extension tells the demo's route by the daemon's demo key variable (decision 0511): its
copy of the name, the one the wire does not carry, is the daemon's `DEMO_KEY_ENV`."""

from __future__ import annotations

import re
from pathlib import Path

from remem.daemon.consolidation.route import DEMO_KEY_ENV

FLOWS_TS = Path(__file__).parents[2] / "vscode-extension" / "src" / "flows.ts"


def test_the_extensions_demo_key_variable_is_the_daemons() -> None:
    found = re.findall(r"^const DEMO_KEY_ENV = '([^']*)';$", FLOWS_TS.read_text(), re.MULTILINE)
    assert found == [DEMO_KEY_ENV], "flows.ts must hold route.py's DEMO_KEY_ENV, once"
