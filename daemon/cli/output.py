"""Printing results: JSON for scripts, one readable line per fact or problem for people."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import click
from pydantic import BaseModel

from ..memory.diagnostics import Diagnostic, FileProblems

EXIT_PROBLEMS = 1
EXIT_INVALID = 2
EXIT_CONFLICT = 3


def emit_json(value: BaseModel | dict[str, Any]) -> None:
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def diagnostic_line(path: str, d: Diagnostic) -> str:
    """`path:line:col: severity: message [code]`, 1-based like compilers, for editors' links."""
    start = d.range.start
    return f"{path}:{start.line + 1}:{start.character + 1}: {d.severity.value}: {d.message} [{d.code}]"


def print_file_problems(files: list[FileProblems], *, err: bool = False) -> None:
    for report in files:
        for d in report.diagnostics:
            click.echo(diagnostic_line(report.path, d), err=err)


def fail(message: str, code: int = EXIT_INVALID) -> NoReturn:
    """One clear line on stderr and a non-zero exit."""
    click.echo(f"remem: {message}", err=True)
    sys.exit(code)
