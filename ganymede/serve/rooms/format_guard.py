"""A notebook room's format fields, which no client edit may make unreadable.

``meta.nbformat`` and ``meta.nbformat_minor`` say how the whole notebook is read and written: a
client update that sets them to a string, null or a fraction would leave the room unable to save
or be read. JupyterLab never edits them; an update that breaks them is refused and undone.
"""

from __future__ import annotations

from typing import Any

from pycrdt import Map

from ganymede.serve.rooms.document import DocumentKind, RoomDocument

FORMAT_KEYS = ("nbformat", "nbformat_minor")


def format_fields(document: RoomDocument) -> dict[str, Any] | None:
    """The format fields as they stand (None for a text document, which has none)."""
    if document.kind is not DocumentKind.NOTEBOOK:
        return None
    meta = document.doc.get("meta", type=Map)
    return {key: meta.get(key) for key in FORMAT_KEYS}


def format_problem(fields: dict[str, Any]) -> str | None:
    """Why these format fields cannot be read, if they cannot (Yjs keeps numbers as floats)."""
    for key, value in fields.items():
        whole = isinstance(value, int | float) and not isinstance(value, bool)
        if not whole or value != int(value) or value < 0:
            return f"the update sets {key} to {value!r}, not a whole number"
    return None


def restore_format(document: RoomDocument, fields: dict[str, Any]) -> None:
    """Put the format fields back as they were (inside the caller's transaction)."""
    meta = document.doc.get("meta", type=Map)
    for key, value in fields.items():
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
