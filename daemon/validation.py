"""What pydantic found wrong with a value, said in one line for a person.

`str(ValidationError)` spans lines and ends each with a link to pydantic's documentation;
a log's, a receipt's or an envelope's error must be one line naming each field and its fault.
"""

from __future__ import annotations

from pydantic import ValidationError


def problems(exc: ValidationError) -> str:
    """`field.path: what is wrong`, for each error, joined by "; "."""
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
