"""nbformat 4 without nbformat: the structural check, and the line splitting Jupyter's files use.

Why not nbformat itself on the hot path: importing it pulls in jsonschema with its format checkers,
which costs over a second in a Jupyter environment (``rfc3987-syntax`` compiles a grammar at
import), and its schema validation walks every output of a large notebook. ``ganymede execute`` is
a CI tool whose start-up is its main cost, and rooms read files on every change from disk. The
check here covers every field the nbformat 4 schema requires, with a message naming the cell.
Notebooks older than nbformat 4 still go through nbformat (rare, and the upgrade is its job).
"""

from __future__ import annotations

import re
from typing import Any

CELL_TYPES = ("code", "markdown", "raw")
OUTPUT_TYPES = ("stream", "display_data", "execute_result", "error")
_CELL_ID = re.compile(r"^[a-zA-Z0-9-_]{1,64}$")
_TEXT_SPLIT_MIMES = ("application/javascript", "image/svg+xml")


class SchemaProblem(ValueError):
    """One reason a notebook does not meet the nbformat 4 schema."""


def _is_json_mime(mime: str) -> bool:
    return mime == "application/json" or (
        mime.startswith("application/") and mime.endswith("+json")
    )


def _multiline(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(line, str) for line in value)
    )


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise SchemaProblem(message)


def check_notebook(notebook: dict[str, Any]) -> None:
    """Raise SchemaProblem unless ``notebook`` has the shape nbformat 4 requires."""
    _require(notebook.get("nbformat") == 4, "nbformat must be 4")
    minor = notebook.get("nbformat_minor")
    _require(
        isinstance(minor, int) and not isinstance(minor, bool) and minor >= 0,
        "nbformat_minor must be a non-negative integer",
    )
    _require(isinstance(notebook.get("metadata"), dict), "metadata must be an object")
    cells = notebook.get("cells")
    _require(isinstance(cells, list), "cells is not a list")
    for index, cell in enumerate(cells):
        try:
            check_cell(cell, ids=minor >= 5)
        except SchemaProblem as problem:
            raise SchemaProblem(f"cell {index}: {problem}") from None


def check_cell(cell: Any, *, ids: bool) -> None:
    """Raise SchemaProblem unless ``cell`` has the shape nbformat 4 requires of a cell."""
    _require(isinstance(cell, dict), "must be an object")
    cell_type = cell.get("cell_type")
    _require(
        cell_type in CELL_TYPES, f"cell_type {cell_type!r} is not one of {', '.join(CELL_TYPES)}"
    )
    _require(_multiline(cell.get("source")), "source must be a string or a list of strings")
    _require(isinstance(cell.get("metadata"), dict), "metadata must be an object")
    if ids:
        cell_id = cell.get("id")
        _require(
            isinstance(cell_id, str) and bool(_CELL_ID.match(cell_id)),
            f"id {cell_id!r} is not 1-64 letters, digits, '-' or '_'",
        )
    if "attachments" in cell:
        _require(cell_type != "code", "code cells have no attachments")
        _require(isinstance(cell["attachments"], dict), "attachments must be an object")
    if cell_type == "code":
        count = cell.get("execution_count", "missing")
        _require(
            count is None or (isinstance(count, int) and not isinstance(count, bool)),
            "execution_count must be an integer or null",
        )
        outputs = cell.get("outputs")
        _require(isinstance(outputs, list), "outputs must be a list")
        for number, output in enumerate(outputs):
            try:
                _check_output(output)
            except SchemaProblem as problem:
                raise SchemaProblem(f"output {number}: {problem}") from None
    else:
        _require("outputs" not in cell, f"{cell_type} cells have no outputs")


def _check_output(output: Any) -> None:
    _require(isinstance(output, dict), "must be an object")
    kind = output.get("output_type")
    _require(kind in OUTPUT_TYPES, f"output_type {kind!r} is not one of {', '.join(OUTPUT_TYPES)}")
    if kind == "stream":
        _require(isinstance(output.get("name"), str), "stream name must be a string")
        _require(_multiline(output.get("text")), "stream text must be a string or list of strings")
    elif kind == "error":
        _require(isinstance(output.get("ename"), str), "ename must be a string")
        _require(isinstance(output.get("evalue"), str), "evalue must be a string")
        traceback = output.get("traceback")
        _require(
            isinstance(traceback, list) and all(isinstance(t, str) for t in traceback),
            "traceback must be a list of strings",
        )
    else:
        _require(isinstance(output.get("data"), dict), "data must be an object")
        _require(isinstance(output.get("metadata"), dict), "metadata must be an object")
        if kind == "execute_result":
            count = output.get("execution_count", "missing")
            _require(
                count is None or (isinstance(count, int) and not isinstance(count, bool)),
                "execution_count must be an integer or null",
            )


def _rejoin_bundle(bundle: dict[str, Any]) -> None:
    for mime, value in bundle.items():
        if not _is_json_mime(mime) and isinstance(value, list) and _multiline(value):
            bundle[mime] = "".join(value)


def _split_bundle(bundle: dict[str, Any]) -> None:
    for mime, value in bundle.items():
        if isinstance(value, str) and (mime.startswith("text/") or mime in _TEXT_SPLIT_MIMES):
            bundle[mime] = value.splitlines(True)


def _each_bundle(cell: dict[str, Any]) -> list[dict[str, Any]]:
    bundles = [b for b in (cell.get("attachments") or {}).values() if isinstance(b, dict)]
    if cell.get("cell_type") == "code":
        for output in cell.get("outputs") or []:
            if output.get("output_type") in ("execute_result", "display_data"):
                bundles.append(output.get("data") or {})
    return bundles


def rejoin_lines(notebook: dict[str, Any]) -> None:
    """Make every multi-line field one string, in place (how Jupyter holds notebooks in memory)."""
    for cell in notebook["cells"]:
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(cell["source"])
        for bundle in _each_bundle(cell):
            _rejoin_bundle(bundle)
        for output in cell.get("outputs") or []:
            if isinstance(output.get("text"), list):
                output["text"] = "".join(output["text"])


def split_lines(notebook: dict[str, Any]) -> None:
    """Make multi-line text lists of lines, in place, as Jupyter writes files (diff-friendly)."""
    for cell in notebook["cells"]:
        if isinstance(cell.get("source"), str):
            cell["source"] = cell["source"].splitlines(True)
        for bundle in _each_bundle(cell):
            _split_bundle(bundle)
        for output in cell.get("outputs") or []:
            if output.get("output_type") == "stream" and isinstance(output.get("text"), str):
                output["text"] = output["text"].splitlines(True)


def strip_transient(notebook: dict[str, Any]) -> None:
    """Drop what never belongs in a file (signature, orig_nbformat, per-cell trusted), in place."""
    metadata = notebook.get("metadata") or {}
    for key in ("orig_nbformat", "orig_nbformat_minor", "signature"):
        metadata.pop(key, None)
    for cell in notebook.get("cells") or []:
        if isinstance(cell, dict) and isinstance(cell.get("metadata"), dict):
            cell["metadata"].pop("trusted", None)
