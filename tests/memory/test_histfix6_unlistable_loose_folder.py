"""A loose-object folder the OS refuses to list is left out of the merges, named; the rest merge.

Each merge lists `objects/<2 hex>/` for the loose objects an older remem wrote. A folder that
could not be listed (its permissions taken away) made the listing raise the OS's refusal, which
stopped the whole merge as trouble that passes ("a later one merges them"); it does not pass, so
every later merge stopped the same way: one more small pack stayed for each entry, without
bound, and the folder was never named as something to fix. It is now said once, as the home in
the way (no damage: never with the advice to move the history aside), left out as an object that
does not read is, and the small packs merge.

Permissions bind root too here: run as root, the merging process is started without the
capabilities that let root past them (see test_histfix5_refused_loose_object).
"""

from __future__ import annotations

import json

import pytest

from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .history_packs import MERGES, MERGING_COMMITS, indexes
from .test_histfix4_damaged_loose_object import planted_loose_object
from .test_histfix5_refused_loose_object import _run


def test_a_loose_object_folder_that_cannot_be_listed_is_named_once_and_the_small_packs_merge(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    revision, loose = planted_loose_object(store, workspace, monkeypatch)
    folder = loose.parent
    folder.chmod(0)
    try:
        if _run(store, "-c", "import os, sys; os.listdir(sys.argv[1])", str(folder)).returncode == 0:
            pytest.skip("run as root, whose processes list past permissions still")
        changes = [json.dumps([put("alpha", f"Later {n}.\n").model_dump()]) for n in range(MERGES)]
        merging = _run(store, "-c", MERGING_COMMITS, str(store.home.root), workspace.cwd, revision, *changes)
    finally:
        folder.chmod(0o700)
    assert merging.returncode == 0, merging.stderr
    answers = [json.loads(line) for line in merging.stdout.splitlines()]
    assert len(answers) == MERGES and all(done["history"] for done in answers), merging.stderr
    assert "a later one merges them" not in merging.stderr, merging.stderr
    said = f"its loose-object folder {folder.name} cannot be listed, and is left out of the merges"
    assert merging.stderr.count(said) == 1, merging.stderr  # once, not at each of the merges
    # No damage, never to move aside: the folder and its fix are named.
    assert "is damaged" not in merging.stderr and "move history aside" not in merging.stderr
    assert f"{folder} cannot be read (Permission denied); let your user read it" in merging.stderr
    assert loose.exists(), "the loose object of a folder left out is left as it is"
    # Every merge took the small packs: one merged pack, not one more per entry.
    assert len(indexes(store)) == 1, merging.stderr
