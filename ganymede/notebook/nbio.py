"""Reading notebooks from text: parse, validate, and say clearly what is wrong.

Only parsing lives here (the caller reads the bytes), so the rooms, the CLI and the core all
refuse a half-written or foreign file with the same message.
"""

from __future__ import annotations

import json
from typing import Any

import nbformat
from nbformat.validator import ValidationError

from ganymede.errors import InvalidNotebook

NBFORMAT_MAJOR = 4


def parse_notebook(text: str | bytes, path: str) -> nbformat.NotebookNode:
    """The notebook in ``text`` as nbformat 4, or InvalidNotebook naming ``path`` and the reason.

    Older nbformat versions are upgraded (as JupyterLab does on open); cells without ids get ids
    when the notebook is 4.5 or newer.
    """
    try:
        raw = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InvalidNotebook(path, f"not JSON ({error})") from None
    if not isinstance(raw, dict) or "nbformat" not in raw:
        raise InvalidNotebook(path, "JSON, but not a notebook (no nbformat key)")
    try:
        node = nbformat.reads(json.dumps(raw), as_version=NBFORMAT_MAJOR)
        nbformat.validate(node)
    except (ValidationError, ValueError, KeyError, TypeError) as error:
        message = str(error).strip()
        first_line = message.splitlines()[0] if message else type(error).__name__
        raise InvalidNotebook(path, first_line) from None
    return node


def dumps_notebook(notebook: dict[str, Any]) -> str:
    """The notebook as Jupyter writes it (indent 1, sorted keys, trailing newline)."""
    return nbformat.writes(nbformat.from_dict(notebook)) + "\n"
