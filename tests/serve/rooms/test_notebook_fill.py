"""Filling a room's notebook in one pass gives the document jupyter_ydoc's ``set()`` gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jupyter_ydoc import YNotebook
from pycrdt import Array, Doc, Map, Text

from ganymede.notebook.nbio import parse_notebook
from ganymede.serve.rooms.document import DocumentKind, RoomDocument
from ganymede.serve.rooms.notebook_fill import fill_empty_notebook
from tests.conftest import GOLDEN

CLIENT_ID = 7


def shape(value: Any) -> Any:
    """A shared value as comparable data: each shared type tagged, values as stored.

    Yjs maps of plain values encode their keys in hash order, so two documents built alike
    need not have the same update bytes; their shapes must be equal.
    """
    if isinstance(value, Text):
        return ("text", str(value))
    if isinstance(value, Map):
        return ("map", {key: shape(value[key]) for key in value})
    if isinstance(value, Array):
        return ("array", [shape(item) for item in value])
    return ("value", json.dumps(value, sort_keys=True))


def both(content: dict[str, Any]) -> tuple[YNotebook, YNotebook]:
    by_set = YNotebook(Doc(client_id=CLIENT_ID))
    by_set.set(content)
    filled = YNotebook(Doc(client_id=CLIENT_ID))
    fill_empty_notebook(filled, content)
    return by_set, filled


def assert_same_document(by_set: YNotebook, filled: YNotebook) -> None:
    for name in ("meta", "cells", "state"):
        kind = Array if name == "cells" else Map
        assert shape(filled.ydoc.get(name, type=kind)) == shape(by_set.ydoc.get(name, type=kind))
    assert filled.ydoc.get_state() == by_set.ydoc.get_state()
    assert len(filled.ydoc.get_update()) == len(by_set.ydoc.get_update())
    assert filled.get() == by_set.get()


def varied_notebook() -> dict[str, Any]:
    """Every kind of cell and output, numbers of every sort, attachments empty and not."""
    attachment = {"image.png": {"image/png": "iVBORw0KGgo="}}
    cells = [
        {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": ["# Title\n", "text"]},
        {"cell_type": "markdown", "id": "m2", "metadata": {}, "source": "x", "attachments": {}},
        {
            "cell_type": "markdown",
            "id": "m3",
            "metadata": {},
            "source": "",
            "attachments": attachment,
        },
        {"cell_type": "raw", "id": "r1", "metadata": {"format": "text/plain"}, "source": "raw"},
        {
            "cell_type": "code",
            "id": "c1",
            "execution_count": 3,
            "metadata": {"scrolled": True, "ratio": 0.5, "count": 2, "whole": 2.0, "none": None},
            "outputs": [
                {"name": "stdout", "output_type": "stream", "text": ["a\n", "b\n"]},
                {"name": "stderr", "output_type": "stream", "text": "warning\n"},
                {
                    "output_type": "execute_result",
                    "execution_count": 3,
                    "data": {"text/plain": ["1\n", "2"], "text/html": "<b>1</b>"},
                    "metadata": {"isolated": True},
                },
                {
                    "output_type": "display_data",
                    "data": {"image/png": "iVBORw0KGgo="},
                    "metadata": {"image/png": {"width": 10}},
                },
                {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t1", "t2"]},
            ],
            "source": "print(1)\nprint(2)",
        },
        {"cell_type": "code", "id": "c2", "execution_count": None, "metadata": {}, "outputs": []},
    ]
    cells[-1]["source"] = ""
    metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3"}, "custom": [1, 2.5]}
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def test_a_varied_notebook_fills_as_set_does() -> None:
    assert_same_document(*both(varied_notebook()))


@pytest.mark.parametrize("path", sorted(GOLDEN.rglob("*.ipynb")), ids=lambda path: path.name)
def test_golden_notebooks_fill_as_set_does(path: Path) -> None:
    content = parse_notebook(path.read_bytes(), str(path))
    by_set, filled = both(content)
    if content["nbformat_minor"] >= 5:
        assert_same_document(by_set, filled)
        return
    # Before 4.5 both invent cell ids; they differ, the rest must not.
    ids = [cell["id"] for cell in filled.ycells]
    assert len(set(ids)) == len(ids) == len(content["cells"])
    for notebook in (by_set, filled):
        for cell in notebook.ycells:
            cell["id"] = "same"
    assert shape(filled.ycells) == shape(by_set.ycells)
    assert shape(filled.ydoc.get("meta", type=Map)) == shape(by_set.ydoc.get("meta", type=Map))


def test_the_fill_joins_the_transaction_it_is_given() -> None:
    notebook = YNotebook()
    updates: list[bytes] = []
    notebook.ydoc.observe(lambda event: updates.append(event.update))
    with notebook.ydoc.transaction():
        fill_empty_notebook(notebook, varied_notebook())
        notebook.ystate["dirty"] = False
    assert len(updates) == 1


def test_a_notebook_without_cells_is_left_to_set() -> None:
    with pytest.raises(ValueError):
        fill_empty_notebook(YNotebook(), {**varied_notebook(), "cells": []})
    document = RoomDocument(DocumentKind.NOTEBOOK)
    empty = {**varied_notebook(), "cells": []}
    document.load(json.dumps(empty).encode(), "empty.ipynb", "hash")
    shown = document.shared.ycells  # type: ignore[attr-defined]
    assert [cell["cell_type"] for cell in shown] == ["code"]  # the one set() invents
    assert document.content()["cells"] == []  # which the file does not get


def test_a_signed_notebook_fills_with_its_code_cells_marked_trusted() -> None:
    content = varied_notebook()
    notebook = YNotebook()
    cell_ids = fill_empty_notebook(notebook, content, trusted=True)
    assert cell_ids == [cell["id"] for cell in content["cells"]]
    for cell, ycell in zip(content["cells"], notebook.ycells, strict=True):
        marked = ycell["metadata"].get("trusted")
        assert marked is (True if cell["cell_type"] == "code" else None)
        assert "trusted" not in cell["metadata"]  # the content itself is left alone


def test_the_fill_names_the_ids_it_gave_cells_that_had_none() -> None:
    content = varied_notebook()
    for cell in content["cells"]:
        del cell["id"]
    notebook = YNotebook()
    cell_ids = fill_empty_notebook(notebook, content)
    assert cell_ids == [cell["id"] for cell in notebook.ycells]
    assert len(set(cell_ids)) == len(content["cells"])
