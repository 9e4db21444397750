"""A `MEMORY.md` link to a record file that cannot be read says why, through the real server.

Every such link hovered "No record file … exists in this workspace; regenerate MEMORY.md",
though the file was there: a link (which remem does not follow), a folder, a file the user
may not read. Only a file that is not there says so now.
"""

from __future__ import annotations

from pathlib import Path

from remem.daemon.home import Home
from tests.permissions import modes

from .editor import RECORD
from .piped_server import Server, bound_server, initialize, server  # noqa: F401 - the fixtures

TEXT = RECORD.format(name="{name}", description="a note", type="project", body="Body.\n")


def _workspace(tmp_path: Path) -> Path:
    folder = Home(tmp_path / "home").workspaces / "proj"
    folder.mkdir(parents=True)
    return folder


def _hovers(talked: Server, folder: Path, names: list[str]) -> dict[str, str]:
    """What hovering each of `names` in a `MEMORY.md` that links them shows."""
    uri = (folder / "MEMORY.md").as_uri()
    index = "".join(f"- [{name}]({name}.md) — a note\n" for name in names)
    document = {"uri": uri, "languageId": "markdown", "version": 1, "text": index}
    initialize(talked)
    talked.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
    shown = {}
    for line, name in enumerate(names, 1):
        talked.send({"id": line, "method": "textDocument/hover", "params": {
            "textDocument": {"uri": uri}, "position": {"line": line - 1, "character": 4}}})  # fmt: skip
        shown[name] = talked.answer(line)["result"]["contents"]["value"]
    return shown


def test_a_link_a_folder_and_no_file_at_all_each_say_what_stands_there(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    folder = _workspace(tmp_path)
    kept = tmp_path / "elsewhere.md"
    kept.write_text(TEXT.format(name="linked"))
    (folder / "linked.md").symlink_to(kept)
    (folder / "boxed.md").mkdir()

    shown = _hovers(server, folder, ["linked", "boxed", "gone"])
    assert shown["linked"] == (
        "No record file `linked.md`: it is a symbolic link, which remem does not follow (it could lead "
        "out of REMEM_HOME); replace it with a plain copy of the file it points to."
    )
    assert shown["boxed"] == "No record file `boxed.md`: it is a folder, and a record must be a regular file."
    assert shown["gone"] == "No record file `gone.md` exists in this workspace; regenerate MEMORY.md."


def test_a_record_file_that_cannot_be_read_says_the_error(
    bound_server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    folder = _workspace(tmp_path)
    (folder / "locked.md").write_text(TEXT.format(name="locked"))
    with modes((folder / "locked.md", 0)):
        shown = _hovers(bound_server, folder, ["locked"])
    assert (
        shown["locked"]
        == "`locked.md` cannot be read (Permission denied), so what this record holds is not known."
    )
