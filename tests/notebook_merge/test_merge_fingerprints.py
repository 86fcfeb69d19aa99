"""The merge compares most cells by one JSON dump of the whole cell and falls back to the parts
only when the dumps differ: these cases pin that equal values still merge as equal when their
text differs, and that values Python calls equal but JSON does not still count as changes."""

from __future__ import annotations

import copy
from typing import Any

from ganymede.notebook.merge import merge_notebooks


def code(cell_id: str, source: Any = "x = 1", **fields: Any) -> dict[str, Any]:
    cell = {"id": cell_id, "cell_type": "code", "metadata": {}, "source": source}
    return cell | {"outputs": [], "execution_count": None} | fields


def notebook(*cells: dict[str, Any]) -> dict[str, Any]:
    return {"cells": copy.deepcopy(list(cells)), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_lines_and_whole_floats_read_differently_are_no_change() -> None:
    base = notebook(code("a", ["x = 1\n", "y = 2"], execution_count=3.0), code("b"))
    ours = notebook(code("a", "x = 1\ny = 2", execution_count=3), code("b", "edited"))
    result = merge_notebooks(base, ours, base)
    assert not result.conflicts
    sources = ["".join(cell["source"]) for cell in result.notebook["cells"]]
    assert sources == ["x = 1\ny = 2", "edited"]
    assert not result.room_changed
    assert result.file_changed


def test_true_is_a_change_from_1_though_python_calls_them_equal() -> None:
    base = notebook(code("a", metadata={"collapsed": 1}))
    theirs = notebook(code("a", metadata={"collapsed": True}))
    result = merge_notebooks(base, base, theirs)
    assert result.notebook["cells"][0]["metadata"] == {"collapsed": True}
    assert result.notebook["cells"][0]["metadata"]["collapsed"] is True
    assert result.room_changed
    assert not result.file_changed


def test_a_long_notebook_keeps_one_change_from_each_side() -> None:
    cells = [code(f"c{index}", f"value = {index}", execution_count=index) for index in range(500)]
    base = notebook(*cells)
    ours, theirs = copy.deepcopy(base), copy.deepcopy(base)
    ours["cells"][1]["source"] = "edited in the room"
    theirs["cells"][400]["metadata"] = {"tags": ["changed on disk"]}
    result = merge_notebooks(base, ours, theirs)
    assert not result.conflicts
    merged = result.notebook["cells"]
    assert merged[1]["source"] == "edited in the room"
    assert merged[400]["metadata"] == {"tags": ["changed on disk"]}
    assert merged[2] == base["cells"][2]
    assert result.room_changed and result.file_changed
    assert merged[2] is not base["cells"][2] and merged[2] is not theirs["cells"][2]


def test_cells_the_room_already_has_as_merged_are_named() -> None:
    base = notebook(code("same"), code("mine"), code("theirs"), code("lines", ["a\n", "b"]))
    ours = copy.deepcopy(base)
    ours["cells"][1]["source"] = "edited in the room"
    ours["cells"][3]["source"] = "a\nb"
    theirs = copy.deepcopy(base)
    theirs["cells"][2]["source"] = "edited on disk"
    result = merge_notebooks(base, ours, theirs)
    # "lines" is the same cell, spelled differently: applying it would change nothing, but
    # only cells equal as JSON are named, so it is compared again when applied.
    assert result.same_in_room == {"same", "mine"}
