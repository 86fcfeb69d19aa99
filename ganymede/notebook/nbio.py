"""Reading notebooks from text: parse, validate, and say clearly what is wrong.

Only parsing lives here (the caller reads the bytes), so the rooms, the CLI and the core all
refuse a half-written or foreign file with the same message.

nbformat's own ``reads`` is not used: it logs invalid notebooks instead of raising, and its
validator *warns* (``MissingIDFieldWarning``, ``DuplicateCellId``) while repairing cell ids in
place. Ganymede repairs ids itself before validating, so reading a notebook never warns.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import nbformat
from nbformat.validator import ValidationError

from ganymede.errors import InvalidNotebook

NBFORMAT_MAJOR = 4
_FIRST_MINOR_WITH_IDS = 5


def parse_notebook(text: str | bytes, path: str) -> nbformat.NotebookNode:
    """The notebook in ``text`` as nbformat 4, or InvalidNotebook naming ``path`` and the reason.

    Multiline strings stored as lists of lines are joined, as nbformat's reader does. Older
    nbformat versions are upgraded (as JupyterLab does on open); in a 4.5+ notebook, cells with a
    missing or duplicate id get a fresh one, as Jupyter's contents API does.
    """
    try:
        raw = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InvalidNotebook(path, f"not JSON ({error})") from None
    if not isinstance(raw, dict) or "nbformat" not in raw:
        raise InvalidNotebook(path, "JSON, but not a notebook (no nbformat key)")
    major = raw["nbformat"]
    if not isinstance(major, int) or isinstance(major, bool):
        raise InvalidNotebook(path, f"nbformat is {major!r}, not a version number")
    version_reader = nbformat.versions.get(major)
    if version_reader is None or major > NBFORMAT_MAJOR:
        raise InvalidNotebook(path, f"nbformat {major} is not a version this reader knows")
    problem = _structure_problem(raw) if major == NBFORMAT_MAJOR else None
    if problem is not None:
        raise InvalidNotebook(path, problem)
    if major == NBFORMAT_MAJOR:
        _repair_cell_ids(raw)
    try:
        node = version_reader.to_notebook_json(raw, minor=raw.get("nbformat_minor"))
        if major < NBFORMAT_MAJOR:
            node = nbformat.convert(node, NBFORMAT_MAJOR)
    except (AttributeError, KeyError, TypeError, ValueError, ValidationError) as error:
        if major == NBFORMAT_MAJOR:
            _validate(nbformat.from_dict(raw), path)
        raise InvalidNotebook(path, f"malformed nbformat {major} notebook ({error!r})") from None
    _validate(node, path)
    return node


def _structure_problem(raw: dict[str, Any]) -> str | None:
    """What makes a v4 notebook too malformed for nbformat's reader and validator to judge.

    Both assume this much shape and crash (or warn once per character of a string) without it.
    """
    if not isinstance(raw.get("nbformat_minor"), int):
        return "nbformat_minor is missing or not a number"
    if not isinstance(raw.get("metadata"), dict):
        return "metadata is missing or not an object"
    cells = raw.get("cells")
    if not isinstance(cells, list):
        return "cells is missing or not a list"
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict):
            return f"cell {index} is not an object"
        if "id" in cell and not isinstance(cell["id"], str):
            return f"cell {index} has an id that is not a string"
    return None


def _validate(node: nbformat.NotebookNode, path: str) -> None:
    """InvalidNotebook with the first line of the schema's complaint, if it has one."""
    try:
        nbformat.validate(node)
    except ValidationError as error:
        message = str(error).strip()
        first_line = message.splitlines()[0] if message else type(error).__name__
        where = "/".join(str(step) for step in getattr(error, "absolute_path", ()))
        raise InvalidNotebook(path, f"{first_line} (at {where})" if where else first_line) from None


def _repair_cell_ids(raw: dict[str, Any]) -> None:
    """Give every cell of a 4.5+ notebook a unique id (``raw`` has passed the structure check)."""
    minor = raw["nbformat_minor"]
    if minor < _FIRST_MINOR_WITH_IDS:
        return
    taken = {cell["id"] for cell in raw["cells"] if "id" in cell}
    seen: set[str] = set()
    for cell in raw["cells"]:
        if "id" not in cell or cell["id"] in seen:
            cell["id"] = _fresh_id(taken)
            taken.add(cell["id"])
        seen.add(cell["id"])


def _fresh_id(taken: set[str]) -> str:
    """An 8-hex cell id (the shape nbformat and JupyterLab give) not in ``taken``."""
    while True:
        candidate = secrets.token_hex(4)
        if candidate not in taken:
            return candidate


def dumps_notebook(notebook: dict[str, Any]) -> str:
    """The notebook as Jupyter writes it (indent 1, sorted keys, trailing newline)."""
    return nbformat.writes(nbformat.from_dict(notebook)) + "\n"
