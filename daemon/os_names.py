"""Names as the operating system hands them to Python: paths, folder names and argv.

Python decodes their bytes that are not UTF-8 to lone surrogates (`surrogateescape`), which
every later encode refuses: the index, the wire models and the history hold UTF-8 text only.
So a name is checked once where it enters, and shown with those bytes written as `\\xNN`.
"""

from __future__ import annotations

import os


def is_utf8(name: str) -> bool:
    """Whether `name` (undecodable bytes as surrogates) is valid UTF-8."""
    if name.isascii():
        return True
    try:
        name.encode()
    except UnicodeEncodeError:
        return False
    return True


def shown(name: str) -> str:
    """`name` with its undecodable bytes written as `\\xNN`: so it can be stored and printed."""
    return os.fsencode(name).decode(errors="backslashreplace")
