"""A loose object whose file the OS refuses for good is left out of the merges; the rest merge.

A loose object that did not read, and whose file, opened once more, was refused by the OS for
any reason but a missing one, stopped the whole merge as the OS's passing trouble ("a later one
merges them"). A refusal that lasts (a link to itself, a file remem's user may not read) made
every later merge stop the same way: one more small pack stayed for each entry, without bound,
and the object was never named as something to fix. Only the OS's troubles that pass by
themselves (no file descriptor or memory left, an interrupted call) leave the merge to a later
one now; any other refusal of the object's own file is said as damage, naming it, and the rest
merge. A link there is never followed by that second open: it is itself what is in the way. A
file remem's user may not read is no damage: it is said as the home in the way, naming it and
the fix, never with the advice to move the history aside.

Permissions bind root too here: run as root, the merging process is started without the
capabilities that let root past them (see test_lspfix_unjudged_cause), and the unreadable case is
skipped, saying why, only where root may not give them up.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.permissions import bound_by_permissions

from .factory import put
from .history_packs import MERGES, MERGING_COMMITS, indexes
from .test_histfix4_damaged_loose_object import planted_loose_object


def linked_to_itself(loose: Path) -> str:
    loose.unlink()
    loose.symlink_to(loose.name)
    return os.strerror(errno.ELOOP)


def unreadable(loose: Path) -> str:
    loose.chmod(0)
    return "Permission denied"


REFUSALS: dict[str, Callable[[Path], str]] = {"linked to itself": linked_to_itself, "unreadable": unreadable}


def _run(store: MemoryStore, *args: str) -> subprocess.CompletedProcess[str]:
    """Python with `args`, run as remem's user, whom permissions bind even when it is root."""
    privileged = os.geteuid() == 0
    try:
        return subprocess.run(
            [sys.executable, *args],
            capture_output=True,
            text=True,
            env={**os.environ, "REMEM_HOME": str(store.home.root)},
            preexec_fn=bound_by_permissions if privileged else None,
            check=False,
        )
    except subprocess.SubprocessError as error:  # root without CAP_SETPCAP, in some containers
        pytest.skip(f"run as root, which cannot give up its way past permissions here: {error}")


@pytest.mark.parametrize("refusal", REFUSALS)
def test_a_loose_object_the_os_refuses_for_good_is_named_and_the_small_packs_merge(
    refusal: str, store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    revision, loose = planted_loose_object(store, workspace, monkeypatch)
    planted = loose.parent.name + loose.name
    said = REFUSALS[refusal](loose)
    if _run(store, "-c", "import sys; open(sys.argv[1], 'rb')", str(loose)).returncode == 0:
        pytest.skip("run as root, whose processes read past permissions still")

    changes = [json.dumps([put("alpha", f"Later {n}.\n").model_dump()]) for n in range(MERGES)]
    merging = _run(store, "-c", MERGING_COMMITS, str(store.home.root), workspace.cwd, revision, *changes)
    assert merging.returncode == 0, merging.stderr
    answers = [json.loads(line) for line in merging.stdout.splitlines()]
    assert len(answers) == MERGES and all(done["history"] for done in answers), merging.stderr
    assert "a later one merges them" not in merging.stderr, merging.stderr
    assert f"its loose object {planted} does not read" in merging.stderr, merging.stderr
    assert said in merging.stderr, merging.stderr
    if refusal == "unreadable":  # no damage, never to move aside: the file and its fix are named
        assert "is damaged" not in merging.stderr and "move history aside" not in merging.stderr
        assert f"{loose} cannot be read (Permission denied); let your user read it" in merging.stderr
    else:
        assert "is damaged" in merging.stderr and "move history aside" in merging.stderr, merging.stderr
    assert loose.is_symlink() or loose.exists(), "a refused loose object is left as it is"
    # Every merge took the small packs: one merged pack, not one more per entry.
    assert len(indexes(store)) == 1, merging.stderr
