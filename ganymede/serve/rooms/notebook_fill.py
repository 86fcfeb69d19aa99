"""Filling an empty ``YNotebook`` from a notebook's JSON data, as ``YNotebook.set`` does, faster.

``set()`` builds every cell out of pycrdt's Python types, whose every key goes through a
transaction context, a prelim object and its integration: on a notebook of a few thousand cells
that is most of the time a room takes to open. Here each key is one call into yrs on the
transaction already open, in the order ``set()`` inserts them, so the document (down to the
bytes of its update) is the one ``set()`` makes; a test holds the two to that.

This reaches below pycrdt's public API (a shared type's ``integrated`` object and the
transaction's ``_txn``): the price of one crossing into Rust per key instead of a dozen Python
calls.
"""

from __future__ import annotations

import copy
from typing import Any
from uuid import uuid4

from jupyter_ydoc import YNotebook
from jupyter_ydoc.utils import cast_all
from jupyter_ydoc.ynotebook import NBFORMAT_MAJOR_VERSION, NBFORMAT_MINOR_VERSION
from pycrdt import Map

# What set() gives a notebook without these metadata keys (JupyterLab expects both).
METADATA_DEFAULTS = {
    "language_info": {"name": ""},
    "kernelspec": {"name": "", "display_name": ""},
}


class _Text(str):
    """A value set() stores as a shared text (a cell's source, a stream output's text)."""


def fill_empty_notebook(
    notebook: YNotebook, content: dict[str, Any], *, trusted: bool = False
) -> list[str]:
    """Fill the empty ``notebook`` with ``content`` in one transaction (the caller's, if open);
    the cells' ids, in order (set() gives a cell without one a fresh id, and so does this).

    ``trusted`` marks every code cell ``metadata.trusted``, as jupyter_server marks the cells of
    a signed notebook it reads, in the same pass. ``content`` has at least one cell (set()
    invents one for a notebook with none) and is not changed.
    """
    if not content["cells"]:
        raise ValueError("a notebook without cells is left to YNotebook.set()")
    ids = []
    with notebook.ydoc.transaction() as transaction:
        _fill_meta(notebook, content)
        txn = transaction._txn
        cells = notebook.ycells.integrated
        for index, cell in enumerate(content["cells"]):
            entries = _cell_entries(cell, trusted)
            _fill_map(cells.insert_map_prelim(txn, index), txn, entries)
            ids.append(entries["id"])
    return ids


def _fill_meta(notebook: YNotebook, content: dict[str, Any]) -> None:
    """The notebook's ``meta`` map: version numbers as floats (Yjs numbers), default metadata."""
    meta = copy.deepcopy({key: value for key, value in content.items() if key != "cells"})
    cast_all(meta, int, float)
    ymeta = notebook.ydoc.get("meta", type=Map)
    ymeta["nbformat"] = meta.get("nbformat", NBFORMAT_MAJOR_VERSION)
    ymeta["nbformat_minor"] = meta.get("nbformat_minor", NBFORMAT_MINOR_VERSION)
    metadata = meta.get("metadata", {})
    for key, default in METADATA_DEFAULTS.items():
        metadata.setdefault(key, default)
    ymeta["metadata"] = Map(metadata)


def _cell_entries(value: dict[str, Any], trusted: bool) -> dict[str, Any]:
    """A cell's keys in the order set() inserts them, the shared ones marked by their type."""
    cell = dict(value)
    if "id" not in cell:
        cell["id"] = str(uuid4())
    cell["source"] = _Text(_joined(cell["source"]))
    cell["metadata"] = _SharedMap(cell.get("metadata", {}))
    if cell["cell_type"] in ("raw", "markdown"):
        if "attachments" in cell and not cell["attachments"]:
            del cell["attachments"]
    elif cell["cell_type"] == "code":
        cell["outputs"] = _SharedArray(_output_entries(o) for o in cell.get("outputs", []))
        cell["execution_state"] = "idle"
        if trusted:
            cell["metadata"]["trusted"] = True
    return cell


def _output_entries(value: dict[str, Any]) -> _SharedMap:
    output = dict(value)
    if output.get("output_type") == "stream":
        output["text"] = _Text(_joined(output.get("text", "")))
    return _SharedMap(output)


class _SharedMap(dict[str, Any]):
    """A value set() stores as a shared map."""


class _SharedArray(list[_SharedMap]):
    """A value set() stores as a shared array (of maps: a code cell's outputs)."""


def _fill_map(ymap: Any, txn: Any, entries: dict[str, Any]) -> None:
    for key, value in entries.items():
        if isinstance(value, _Text):
            ymap.insert_text_prelim(txn, key).insert(txn, 0, str(value))
        elif isinstance(value, _SharedMap):
            _fill_map(ymap.insert_map_prelim(txn, key), txn, value)
        elif isinstance(value, _SharedArray):
            yarray = ymap.insert_array_prelim(txn, key)
            for index, item in enumerate(value):
                _fill_map(yarray.insert_map_prelim(txn, index), txn, item)
        else:
            ymap.insert(txn, key, value)


def _joined(text: str | list[str]) -> str:
    return "".join(text) if isinstance(text, list) else text
