"""Reading and writing notebook text: parse, check, and say clearly what is wrong.

Only parsing and serialising live here (the caller does the I/O), so the rooms, the CLI and the
core refuse a half-written or foreign file with the same message, and write files byte for byte
as Jupyter does. nbformat 4 is handled by ``schema`` without importing nbformat (see why there);
older notebooks are upgraded through nbformat, as JupyterLab does on open.
"""

from __future__ import annotations

import copy
import json
import secrets
from collections.abc import Callable
from typing import Any

from ganymede.errors import InvalidNotebook
from ganymede.notebook.schema import (
    SchemaProblem,
    check_notebook,
    rejoin_lines,
    split_lines,
    strip_transient,
)

NBFORMAT_MAJOR = 4
_FIRST_MINOR_WITH_IDS = 5


def parse_notebook(text: str | bytes, path: str) -> dict[str, Any]:
    """The notebook in ``text`` as nbformat 4 JSON data, or InvalidNotebook naming ``path``.

    Multi-line strings stored as lists of lines are joined, and transient keys (signature,
    ``trusted``) dropped, as nbformat's reader does. In a 4.5+ notebook, cells with a missing or
    duplicate id get a fresh one, as Jupyter's contents API does (without nbformat's warnings).
    """
    return parse_notebook_declared(text, path)[0]


def parse_notebook_declared(
    text: str | bytes, path: str, *, parse_int: Callable[[str], Any] = int
) -> tuple[dict[str, Any], int]:
    """``parse_notebook``, and the nbformat major version ``text`` declares: a notebook before
    version 4 comes back upgraded, its cells with fresh ids that match nothing.

    ``parse_int`` reads each whole number, as ``json.loads`` takes it (it may refuse one).
    """
    try:
        raw = json.loads(text, parse_int=parse_int)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InvalidNotebook(path, f"not JSON ({error})") from None
    if not isinstance(raw, dict) or "nbformat" not in raw:
        raise InvalidNotebook(path, "JSON, but not a notebook (no nbformat key)")
    major = raw["nbformat"]
    if not isinstance(major, int) or isinstance(major, bool):
        raise InvalidNotebook(path, f"nbformat is {major!r}, not a version number")
    if not 1 <= major <= NBFORMAT_MAJOR:
        raise InvalidNotebook(path, f"nbformat {major} is not a version this reader knows")
    if major < NBFORMAT_MAJOR:
        return _upgrade(raw, major, path), major
    _repair_cell_ids(raw)
    strip_transient(raw)
    try:
        check_notebook(raw)
    except SchemaProblem as problem:
        raise InvalidNotebook(path, str(problem)) from None
    rejoin_lines(raw)
    return raw, major


def dumps_notebook(notebook: dict[str, Any]) -> str:
    """The notebook as Jupyter writes it: lines split, indent 1, sorted keys, trailing newline."""
    return dumps_fresh_notebook(copy.deepcopy(notebook))


def dumps_fresh_notebook(on_disk: dict[str, Any]) -> str:
    """``dumps_notebook`` for a notebook built just to be written: its lines are split in place
    instead of in a copy, which on a large notebook costs more than the writing."""
    split_lines(on_disk)
    strip_transient(on_disk)
    text = json.dumps(on_disk, indent=1, sort_keys=True, ensure_ascii=False, separators=(",", ": "))
    return text + "\n"


def _repair_cell_ids(raw: dict[str, Any]) -> None:
    """Give every cell of a 4.5+ notebook a unique id; malformed parts are left to the check."""
    minor, cells = raw.get("nbformat_minor"), raw.get("cells")
    if not isinstance(minor, int) or minor < _FIRST_MINOR_WITH_IDS or not isinstance(cells, list):
        return
    dict_cells = [cell for cell in cells if isinstance(cell, dict)]
    taken = {cell["id"] for cell in dict_cells if isinstance(cell.get("id"), str)}
    seen: set[str] = set()
    for cell in dict_cells:
        cell_id = cell.get("id")
        if cell_id is not None and not isinstance(cell_id, str):
            continue  # the check names it
        if cell_id is None or cell_id in seen:
            cell_id = cell["id"] = _fresh_id(taken)
            taken.add(cell_id)
        seen.add(cell_id)


def _fresh_id(taken: set[str]) -> str:
    """An 8-hex cell id (the shape nbformat and JupyterLab give) not in ``taken``."""
    while True:
        candidate = secrets.token_hex(4)
        if candidate not in taken:
            return candidate


def _upgrade(raw: dict[str, Any], major: int, path: str) -> dict[str, Any]:
    """An nbformat 1-3 notebook upgraded to 4.5 by nbformat (imported only for these)."""
    import nbformat
    from nbformat.validator import ValidationError

    try:
        old = nbformat.versions[major].to_notebook_json(raw, minor=raw.get("nbformat_minor"))
        upgraded = json.loads(json.dumps(nbformat.convert(old, NBFORMAT_MAJOR)))
    except (AttributeError, KeyError, TypeError, ValueError, ValidationError) as error:
        raise InvalidNotebook(path, f"malformed nbformat {major} notebook ({error!r})") from None
    return parse_notebook(json.dumps(upgraded), path)
