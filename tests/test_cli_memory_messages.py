"""`remem memory ...` says what is wrong with a `--changes` input in the user's words, naming it,
and its help names nothing a newcomer cannot look up."""

from __future__ import annotations

import re

import click

from remem.daemon.cli import cli


def test_no_help_names_a_decision_number() -> None:
    """Decisions are the project's notes: a newcomer reading `--help` cannot follow one."""

    def helps(command: click.Command, path: list[str]) -> list[tuple[str, str]]:
        ctx = click.Context(command, info_name=" ".join(path))
        found = [(" ".join(path), command.get_help(ctx))]
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                found += helps(sub, [*path, name])
        return found

    every = helps(cli, ["remem"])
    assert len(every) > 30, "every subcommand is walked"
    assert [name for name, text in every if re.search(r"decision\s+\d", text, re.IGNORECASE)] == []
