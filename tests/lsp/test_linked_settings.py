"""The editor's model picker and "Enter API Key…" on a home whose `settings.yml` and
`credentials.yml` link into a dotfiles repository: the settings are read through the links, and
a change is refused with the daemon's sentence naming the link, its target and what to set
there, never as a conflict to retry (decision 0375)."""

from __future__ import annotations

import os

import pytest
from pygls.exceptions import JsonRpcException

from remem.daemon.fsutil import is_temp_name
from remem.daemon.protocol.rpc import HOME_UNUSABLE
from tests.lsp.editor import own_home
from tests.lsp.live import start_editor, stop_editor

pytestmark = pytest.mark.asyncio


def refusal(link: str, target: str, change: str) -> str:
    return (
        f"{link} is a symbolic link to {target}, and remem does not write through links (it writes "
        f"only inside its home), so nothing was written; to {change}, edit {target} yourself, or "
        "replace the link with a copy of the file"
    )


async def test_the_model_picker_and_the_key_prompt_say_the_files_are_links() -> None:
    home = own_home("remem-lsp-linked-")
    dotfiles = home.root.parent / "dotfiles"
    dotfiles.mkdir()
    texts = {
        "settings.yml": "daemon:\n  idle_minutes: 2\nconsolidation:\n  provider: openai\n  model: gpt-a\n",
        "credentials.yml": "providers:\n  openai:\n    api_key: sk-dotfiles\n",
    }
    for name, text in texts.items():
        (dotfiles / name).write_text(text)
        (dotfiles / name).chmod(0o600)
        (home.root / name).unlink(missing_ok=True)
        (home.root / name).symlink_to(f"../dotfiles/{name}")
    target = {name: os.path.realpath(dotfiles / name) for name in texts}
    editor = await start_editor(home)
    try:
        shown = await editor.request("remem/settings", {})
        assert (shown["provider"], shown["model"], shown["keyReady"]) == ("openai", "gpt-a", True)
        with pytest.raises(JsonRpcException) as chosen:
            await editor.command("remem.lsp.selectModel", {"provider": "openai", "model": "gpt-b"})
        change = 'set consolidation.provider: "openai", consolidation.model: "gpt-b"'
        assert chosen.value.code == HOME_UNUSABLE
        assert chosen.value.message == refusal(str(home.settings_file), target["settings.yml"], change)
        with pytest.raises(JsonRpcException) as stored:
            await editor.command("remem.lsp.setApiKey", {"provider": "openai", "apiKey": "sk-typed"})
        assert stored.value.code == HOME_UNUSABLE
        assert stored.value.message == refusal(
            str(home.credentials_file), target["credentials.yml"], "set providers.openai.api_key"
        )
        assert await editor.request("remem/settings", {}) == shown, "nothing changed"
    finally:
        await stop_editor(editor)
    for name, text in texts.items():
        assert os.readlink(home.root / name) == f"../dotfiles/{name}"
        assert (dotfiles / name).read_text() == text
    assert [p.name for p in home.root.iterdir() if is_temp_name(p.name)] == []
    assert sorted(p.name for p in dotfiles.iterdir()) == sorted(texts)
