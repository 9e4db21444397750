"""Realistic, deterministic memory inputs: Markdown bodies, record files and GLOBAL.md texts.

Sizes are filled with the kind of Markdown agents write (headings, paragraphs, lists, code
blocks, a few non-ASCII characters), so parsers see realistic line lengths and structure rather
than one repeated character.
"""

from __future__ import annotations

from collections.abc import Callable

from remem.daemon.memory.record import render_record
from remem.daemon.protocol.memory import Record


def _heading(n: int) -> str:
    return f"## Area {n}: build, test and release\n"


def _paragraph(n: int) -> str:
    return (
        f"Step {n}: the service reads `settings.yml` once at start-up, so a configuration change "
        "needs a restart (SIGHUP is not handled). Confirm the deploy target with the user before "
        "running anything that touches production — staging and production share credentials, "
        "so a wrong `--context` flag is not caught by the API. Café-locale tests run nightly.\n"
    )


def _bullets(n: int) -> str:
    return (
        f"- Run `uv run pytest -q tests/unit` before every commit (about {n} s on a laptop).\n"
        "- Integration tests need Docker; start the services with `make services` first.\n"
        "- Never commit `.env.local`: it holds personal API tokens.\n"
        "- Migrations are append-only; fix a bad one with a new migration, never by editing.\n"
    )


def _code(n: int) -> str:
    return (
        "```bash\n"
        "uv sync --frozen\n"
        f"uv run alembic upgrade head  # migration {n:04d}\n"
        "uv run pytest -q -k 'not slow' --maxfail=1\n"
        "```\n"
    )


_BLOCKS: tuple[Callable[[int], str], ...] = (_heading, _paragraph, _bullets, _code, _paragraph)


def markdown(max_bytes: int, *, start: int = 0) -> str:
    """Canonical Markdown of at most `max_bytes` UTF-8 bytes, as close as whole blocks allow.

    `start` shifts the numbering, so bodies built with different starts differ in content.
    """
    blocks: list[str] = []
    used = 0
    number = start
    while True:
        block = _BLOCKS[number % len(_BLOCKS)](number)
        size = len(block.encode("utf-8")) + (1 if blocks else 0)  # the blank line between blocks
        if used + size > max_bytes:
            return "\n".join(blocks)
        blocks.append(block)
        used += size
        number += 1


def record_file(name: str, body_bytes: int) -> str:
    """The canonical text of a valid project record whose body is close to `body_bytes`."""
    return render_record(record(name, markdown(body_bytes)))


def record(name: str, content: str, kind: str = "project") -> Record:
    return Record(
        name=name,
        description=f"How to build, test and release this project ({name}); read before changing CI",
        type=kind,
        content=content,
    )
