"""Small notebooks for runner tests, built in code so each test shows what it runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
from nbformat import v4

from ganymede.execute import RunRequest

PYTHON3 = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def notebook(
    *cells: str | tuple[str, list[str]], kernelspec: dict[str, str] | None = PYTHON3, minor: int = 5
) -> dict[str, Any]:
    """A notebook of code cells (a tuple gives a cell its tags), as plain JSON data."""
    node = v4.new_notebook()
    for cell in cells:
        source, tags = (cell, []) if isinstance(cell, str) else cell
        node.cells.append(v4.new_code_cell(source, metadata={"tags": tags} if tags else {}))
    if kernelspec is not None:
        node.metadata["kernelspec"] = dict(kernelspec)
    if minor < 5:
        for item in node.cells:
            item.pop("id", None)
        node.nbformat_minor = minor
    data = json.loads(json.dumps(node))
    nbformat.validate(data)
    return data


def request(
    directory: Path, nb: dict[str, Any], name: str = "run.ipynb", **options: Any
) -> RunRequest:
    """A request for ``nb`` as if read from ``directory/name`` (the file is written too)."""
    path = directory / name
    path.write_text(json.dumps(nb))
    return RunRequest(path=path, notebook=nb, **options)


def texts(cell: dict[str, Any]) -> list[str]:
    """What each output of a cell shows as text."""
    shown = []
    for output in cell["outputs"]:
        if output["output_type"] == "stream":
            shown.append(f"{output['name']}:{output['text']}")
        elif output["output_type"] == "error":
            shown.append(f"error:{output['ename']}")
        else:
            shown.append(output["data"].get("text/plain", ""))
    return shown
