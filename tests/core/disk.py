"""Writing real notebooks into a test root, the way Jupyter writes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
from nbformat import v4


def code(source: str, *outputs: dict[str, Any], cell_id: str | None = None) -> Any:
    cell = v4.new_code_cell(source, outputs=[nbformat.from_dict(o) for o in outputs])
    if cell_id is not None:
        cell.id = cell_id
    return cell


def markdown(source: str, cell_id: str | None = None) -> Any:
    cell = v4.new_markdown_cell(source)
    if cell_id is not None:
        cell.id = cell_id
    return cell


def raw(source: str) -> Any:
    return v4.new_raw_cell(source)


def write_notebook(path: Path, *cells: Any, kernel: str | None = "python3") -> Path:
    """Write a valid nbformat 4.5 notebook with ``cells`` (and a kernelspec unless None)."""
    notebook = v4.new_notebook(cells=list(cells))
    if kernel is not None:
        notebook.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "x"}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nbformat.writes(notebook), encoding="utf-8")
    return path


def stream(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text}


def display(data: dict[str, Any]) -> dict[str, Any]:
    return {"output_type": "display_data", "data": data, "metadata": {}}


def error(ename: str, evalue: str) -> dict[str, Any]:
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": []}
