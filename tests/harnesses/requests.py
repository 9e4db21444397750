"""What a harness sends the model, compared across runs: two requests carrying the same
conversation differ only in harness-made ids and prompt-cache markers."""

from __future__ import annotations

from typing import Any

# Harness-made ids (Codex derives message ids from the thread) and prompt-cache markers (placed
# relative to the end of the request) differ between two requests carrying the same conversation.
VOLATILE = frozenset({"id", "cache_control"})


def comparable(node: Any, prompt: str) -> Any:
    """`node` without volatile fields, with the prompt of the turn after the cut as `PROMPT`."""
    if isinstance(node, dict):
        return {key: comparable(value, prompt) for key, value in node.items() if key not in VOLATILE}
    if isinstance(node, list):
        return [comparable(value, prompt) for value in node]
    return "PROMPT" if node == prompt else node


def same_conversation(child: list[Any], parent: list[Any]) -> bool:
    """The child's request is the parent's next one (its third question's) with only the new
    prompt (the child's question) changed."""
    return comparable(child, "child question") == comparable(parent, "third question")
