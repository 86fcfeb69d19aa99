"""The fast nbformat 4 check agrees with nbformat's validator; files are written as Jupyter does."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

from ganymede.notebook.schema import (
    SchemaProblem,
    check_notebook,
    rejoin_lines,
    split_lines,
    strip_transient,
)


def rich_notebook() -> dict[str, Any]:
    code = new_code_cell("import numpy\nprint('hi')\n1 + 1", execution_count=2)
    code.outputs = [
        new_output("stream", name="stdout", text="hi\nthere\n"),
        new_output(
            "execute_result",
            data={"text/plain": "2\n3", "text/html": "<b>2</b>\n<i/>"},
            execution_count=2,
        ),
        new_output(
            "display_data",
            data={
                "image/png": "iVBORw0KGgo=\n",
                "application/json": {"a": [1]},
                "image/svg+xml": "<svg>\n</svg>",
                "application/vnd.x+json": {"b": 1},
            },
        ),
        new_output(
            "error", ename="ValueError", evalue="bad", traceback=["\x1b[31mline\x1b[0m", "x"]
        ),
    ]
    markdown = new_markdown_cell("# Title\n\nsome *text*\n")
    markdown.attachments = {"a.png": {"image/png": "iVBOR\nw0K"}}
    notebook = new_notebook(cells=[markdown, code, new_raw_cell("raw\ntext")])
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    notebook.metadata["signature"] = "sha256:dropped"
    notebook.cells[1].metadata["trusted"] = True
    return json.loads(json.dumps(notebook))


BREAKAGES: dict[str, Callable[[dict[str, Any]], None]] = {
    "no cells": lambda nb: nb.pop("cells"),
    "metadata a list": lambda nb: nb.__setitem__("metadata", []),
    "minor a string": lambda nb: nb.__setitem__("nbformat_minor", "5"),
    "unknown cell type": lambda nb: nb["cells"][0].__setitem__("cell_type", "heading"),
    "source a number": lambda nb: nb["cells"][0].__setitem__("source", 3),
    "source with a number": lambda nb: nb["cells"][0].__setitem__("source", ["a", 1]),
    "cell without metadata": lambda nb: nb["cells"][2].pop("metadata"),
    "bad id": lambda nb: nb["cells"][0].__setitem__("id", "has space"),
    "long id": lambda nb: nb["cells"][0].__setitem__("id", "x" * 65),
    "code without outputs": lambda nb: nb["cells"][1].pop("outputs"),
    "code without execution_count": lambda nb: nb["cells"][1].pop("execution_count"),
    "execution_count a string": lambda nb: nb["cells"][1].__setitem__("execution_count", "2"),
    "markdown with outputs": lambda nb: nb["cells"][0].__setitem__("outputs", []),
    "unknown output type": lambda nb: nb["cells"][1]["outputs"][0].__setitem__("output_type", "x"),
    "stream without name": lambda nb: nb["cells"][1]["outputs"][0].pop("name"),
    "display without data": lambda nb: nb["cells"][1]["outputs"][2].pop("data"),
    "display without metadata": lambda nb: nb["cells"][1]["outputs"][2].pop("metadata"),
    "error without traceback": lambda nb: nb["cells"][1]["outputs"][3].pop("traceback"),
    "traceback of numbers": lambda nb: nb["cells"][1]["outputs"][3].__setitem__("traceback", [1]),
}


def test_a_valid_notebook_passes_both() -> None:
    notebook = rich_notebook()
    nbformat.validate(nbformat.from_dict(copy.deepcopy(notebook)))
    check_notebook(notebook)


@pytest.mark.parametrize("name", sorted(BREAKAGES))
def test_what_nbformat_rejects_the_check_rejects(name: str) -> None:
    notebook = rich_notebook()
    BREAKAGES[name](notebook)
    with pytest.raises((nbformat.ValidationError, KeyError, TypeError, AssertionError)):
        nbformat.validate(nbformat.from_dict(copy.deepcopy(notebook)))
    with pytest.raises(SchemaProblem):
        check_notebook(notebook)


def test_problems_name_the_cell_and_output() -> None:
    notebook = rich_notebook()
    BREAKAGES["stream without name"](notebook)
    with pytest.raises(SchemaProblem, match=r"^cell 1: output 0: stream name must be a string$"):
        check_notebook(notebook)


def test_split_and_rejoin_match_nbformat_byte_for_byte() -> None:
    notebook = rich_notebook()
    theirs = nbformat.reads(json.dumps(notebook), as_version=4)
    ours = copy.deepcopy(notebook)
    rejoin_lines(ours)
    strip_transient(ours)
    assert ours == json.loads(json.dumps(theirs))
    assert ours["cells"][1]["outputs"][0]["text"] == "hi\nthere\n"
    split_lines(ours)
    ours_text = json.dumps(
        ours, indent=1, sort_keys=True, ensure_ascii=False, separators=(",", ": ")
    )
    assert ours_text == nbformat.writes(theirs)
