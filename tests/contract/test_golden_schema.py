"""The wire contract is what `tests/contract/protocol.json` says, and the extension keeps to it.

A change to any daemon method, notification or error code, or to a `remem/*` request, server
command or notification of the language server, fails here until `PROTOCOL_VERSION` is bumped
and the golden file regenerated (`python -m tests.contract.schema`), so a shape never changes
unnoticed in review.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from remem.lsp import ids
from tests.contract import schema

PROTOCOL_TS = Path(__file__).parents[2] / "vscode-extension" / "src" / "protocol.ts"

# The extension's interfaces that carry a daemon shape: where it is in the contract, and the
# fields the language server adds to it on the way.
DAEMON_SHAPES: dict[str, tuple[tuple[str, ...], set[str]]] = {
    "FlatNode": (("$defs", "FlatNode"), {"ownPrompt"}),  # remem/sessionTree: a fork's own first prompt
    "TurnRow": (("$defs", "TurnRow"), set()),
    "TurnsResult": (("methods", "sessions/turns", "result"), set()),
    "HistoryEntry": (("$defs", "HistoryEntry"), set()),
    "HistoryStat": (("$defs", "FileStat"), set()),
    "HistoryActor": (("$defs", "Actor"), set()),
    "HistoryLogResult": (("methods", "memory/log", "result"), set()),
    "MemoryAtResult": (("methods", "memory/showAt", "result"), set()),
    "RevertResult": (("methods", "memory/revert", "result"), set()),
    "ModelSettings": (("methods", "consolidation/settings/read", "result"), {"settingsFile", "globalFile"}),
    "SessionsProgressParams": (("notifications", "sessions/progress"), set()),
}


@pytest.fixture(scope="module")
def current() -> dict[str, Any]:
    return schema.contract()


def golden() -> dict[str, Any]:
    return json.loads(schema.GOLDEN.read_text())


def differences(old: dict[str, Any], new: dict[str, Any], where: str = "") -> list[str]:
    """The paths at which two documents differ, e.g. `daemon.methods.sessions/list.result`."""
    if not (isinstance(old, dict) and isinstance(new, dict)) or where.count(".") >= 3:
        return [] if old == new else [where or "(root)"]
    found = []
    for key in sorted(old.keys() | new.keys()):
        path = f"{where}.{key}" if where else key
        if key not in old or key not in new:
            found.append(f"{path} ({'added' if key in new else 'removed'})")
        else:
            found.extend(differences(old[key], new[key], path))
    return found


def test_the_contract_is_the_golden_file(current: dict[str, Any]) -> None:
    checked_in = golden()
    changed = differences(checked_in, current)
    if schema.unbumped_change(current, checked_in):
        pytest.fail(
            f"the wire contract changed at {changed}, but PROTOCOL_VERSION is still "
            f"{current['protocolVersion']}: bump it in daemon/protocol/rpc.py, "
            f"then run `{schema.REGENERATE}`",
            pytrace=False,
        )
    assert not changed, f"PROTOCOL_VERSION is bumped; regenerate the golden file: `{schema.REGENERATE}`"


def test_regenerating_refuses_a_change_without_a_version_bump(
    current: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    older = copy.deepcopy(current)
    del older["daemon"]["methods"]["daemon/status"]  # as if the method were new in this change
    file = tmp_path / "protocol.json"
    file.write_text(schema.render(older))
    monkeypatch.setattr(schema, "GOLDEN", file)
    monkeypatch.setattr(schema, "contract", lambda: current)  # computed once, by the fixture

    assert schema.main() == 1
    assert "PROTOCOL_VERSION is still" in capsys.readouterr().err
    assert json.loads(file.read_text()) == older  # left as it was

    older["protocolVersion"] -= 1  # the change comes with a bump
    file.write_text(schema.render(older))
    assert schema.main() == 0
    assert json.loads(file.read_text()) == current


def test_every_request_and_command_checks_its_params_with_a_model(current: dict[str, Any]) -> None:
    lsp = current["lsp"]
    unchecked = [name for name, shape in lsp["requests"].items() if shape["params"] is None]
    unchecked += [name for name, shape in lsp["commands"].items() if shape["argument"] is None]
    assert unchecked == [], "each handler should check what the editor sends with wire.parse/only_argument"


def ts_constants(name: str) -> dict[str, str]:
    """`export const NAME = { key: 'value', ... }` of protocol.ts."""
    found = re.search(rf"export const {name} = \{{(.*?)\}} as const;", PROTOCOL_TS.read_text(), re.S)
    assert found, f"protocol.ts has no `export const {name} = {{...}} as const`"
    return dict(re.findall(r"(\w+): '([^']+)'", found.group(1)))


def ts_interface_fields(name: str) -> set[str]:
    found = re.search(rf"export interface {name} \{{(.*?)\n\}}", PROTOCOL_TS.read_text(), re.S)
    assert found, f"protocol.ts has no `export interface {name}`"
    return set(re.findall(r"^\s+(\w+)\??:", found.group(1), re.M))


def test_the_extension_sends_only_requests_and_commands_the_server_serves(current: dict[str, Any]) -> None:
    lsp = current["lsp"]
    unknown_requests = set(ts_constants("Requests").values()) - lsp["requests"].keys()
    unknown_commands = set(ts_constants("ServerCommands").values()) - lsp["commands"].keys()
    assert unknown_requests == set(), "protocol.ts names requests the language server does not serve"
    assert unknown_commands == set(), "protocol.ts names server commands the language server lacks"


def test_the_extension_listens_to_the_notifications_the_server_sends(current: dict[str, Any]) -> None:
    assert sorted(ts_constants("Notifications").values()) == current["lsp"]["notifications"]


def test_the_transcript_scheme_is_the_servers(current: dict[str, Any]) -> None:
    found = re.search(r"export const TRANSCRIPT_SCHEME = '([^']+)';", PROTOCOL_TS.read_text())
    assert found and found.group(1) == current["lsp"]["schemes"]["transcript"]


def test_the_extension_speaks_the_servers_protocol(current: dict[str, Any]) -> None:
    """The extension warns of a server older than `PROTOCOL`: a bump here is one there; and the
    error codes it reads are the daemon's."""
    found = re.search(r"export const PROTOCOL = (\d+);", PROTOCOL_TS.read_text())
    assert found and int(found.group(1)) == current["protocolVersion"]
    codes = dict(re.findall(r"export const ([A-Z_]+) = (-320\d\d);", PROTOCOL_TS.read_text()))
    assert codes and {name: int(code) for name, code in codes.items()} == {
        name: current["daemon"]["errors"][name] for name in codes
    }


def daemon_shape(current: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    daemon = current["daemon"]
    if path[0] == "$defs":  # a model defined once and used in several methods
        definitions = [m[part].get("$defs", {}) for m in daemon["methods"].values() for part in m]
        return next(defs[path[1]] for defs in definitions if path[1] in defs)
    shape = daemon
    for part in path:
        shape = shape[part]
    return shape


@pytest.mark.parametrize("interface", sorted(DAEMON_SHAPES))
def test_the_extensions_interface_has_only_the_daemons_fields(
    current: dict[str, Any], interface: str
) -> None:
    path, added_by_server = DAEMON_SHAPES[interface]
    daemon_fields = set(daemon_shape(current, path)["properties"])
    unknown = ts_interface_fields(interface) - daemon_fields - added_by_server
    assert unknown == set(), f"protocol.ts {interface} has fields the daemon's {'/'.join(path)} lacks"


def test_the_ids_module_names_what_the_server_serves_and_sends(current: dict[str, Any]) -> None:
    lsp = current["lsp"]
    assert sorted(ids.REQUESTS) == sorted(lsp["requests"])
    assert sorted(ids.COMMANDS) == sorted(lsp["commands"])
    assert sorted(ids.NOTIFICATIONS) == lsp["notifications"]
    assert lsp["schemes"]["transcript"] == ids.TRANSCRIPT_SCHEME
