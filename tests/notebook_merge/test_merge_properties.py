"""Properties of the merge over generated edits: nothing only one side did is ever lost, a side
that changed nothing hands over the other, and every clash is reported with the file winning."""

from __future__ import annotations

import copy
import json
from typing import Any

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ganymede.notebook.merge import MergeResult, merge_notebooks

pytestmark = pytest.mark.slow

CELL_IDS = [f"c{n}" for n in range(6)]
SOURCES = ["", "x = 1", "x = 2\ny = 3", "print(x)\n"]
RUNS = [
    ([], None),
    ([{"output_type": "stream", "name": "stdout", "text": "1\n"}], 1),
    ([{"output_type": "stream", "name": "stdout", "text": "2\n"}], 2),
]
METADATA_KEYS = ["j", "k", "l"]  # free keys: nbformat constrains "tags", "collapsed"
METADATA_VALUES: list[Any] = [["a"], ["b"], True, False, 1]

Notebook = dict[str, Any]

# No example database: the tree stays clean, and a failure prints the blob to reproduce it.
checks = settings(
    max_examples=200,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def new_cell(draw: st.DrawFn, cell_id: str) -> dict[str, Any]:
    cell: dict[str, Any] = {
        "id": cell_id,
        "cell_type": draw(st.sampled_from(["code", "markdown"])),
        "metadata": draw(metadata()),
        "source": draw(st.sampled_from(SOURCES)),
    }
    if cell["cell_type"] == "code":
        outputs, count = draw(st.sampled_from(RUNS))
        cell |= {"outputs": copy.deepcopy(outputs), "execution_count": count}
    return cell


def metadata() -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(
        st.sampled_from(METADATA_KEYS), st.sampled_from(METADATA_VALUES), max_size=2
    )


@st.composite
def edited_metadata(draw: st.DrawFn, original: dict[str, Any]) -> dict[str, Any]:
    edited = copy.deepcopy(original)
    for key in METADATA_KEYS:
        action = draw(st.sampled_from(["keep", "keep", "set", "drop"]))
        if action == "set":
            edited[key] = draw(st.sampled_from(METADATA_VALUES))
        elif action == "drop":
            edited.pop(key, None)
    return edited


@st.composite
def edited_cell(draw: st.DrawFn, original: dict[str, Any]) -> dict[str, Any]:
    cell = copy.deepcopy(original)
    if draw(st.booleans()):
        cell["source"] = draw(st.sampled_from(SOURCES))
    if draw(st.integers(0, 3)) == 0:
        if cell["cell_type"] == "code":
            cell["cell_type"] = "markdown"
            del cell["outputs"], cell["execution_count"]
        else:
            cell |= {"cell_type": "code", "outputs": [], "execution_count": None}
    if cell["cell_type"] == "code" and draw(st.booleans()):
        outputs, count = draw(st.sampled_from(RUNS))
        cell |= {"outputs": copy.deepcopy(outputs), "execution_count": count}
    cell["metadata"] = draw(edited_metadata(cell["metadata"]))
    return cell


@st.composite
def side(draw: st.DrawFn, base: Notebook, prefix: str) -> Notebook:
    """``base`` as one side left it: cells edited, deleted, reordered and added."""
    cells = []
    for cell in base["cells"]:
        if draw(st.integers(0, 4)) == 0:
            continue
        cells.append(draw(edited_cell(cell)) if draw(st.booleans()) else copy.deepcopy(cell))
    if draw(st.integers(0, 3)) == 0:
        cells = draw(st.permutations(cells))
    for number in range(draw(st.integers(0, 2))):
        position = draw(st.integers(0, len(cells)))
        cells.insert(position, draw(new_cell(f"{prefix}{number}")))
    notebook_metadata = base["metadata"]
    if draw(st.booleans()):
        notebook_metadata = draw(edited_metadata(notebook_metadata))
    return {**base, "cells": cells, "metadata": copy.deepcopy(notebook_metadata)}


@st.composite
def three_notebooks(draw: st.DrawFn) -> tuple[Notebook, Notebook, Notebook]:
    cell_ids = draw(st.lists(st.sampled_from(CELL_IDS), unique=True, max_size=6))
    base = {
        "cells": [draw(new_cell(cell_id)) for cell_id in cell_ids],
        "metadata": draw(metadata()),
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return base, draw(side(base, "room")), draw(side(base, "file"))


def parts(cell: dict[str, Any]) -> dict[str, str]:
    """A cell's separately merged parts, as JSON so that ``True`` and ``1`` differ."""
    found = {"source": json.dumps([cell["cell_type"], cell["source"]])}
    if cell["cell_type"] == "code":
        found["outputs"] = json.dumps([cell["outputs"], cell["execution_count"]])
    for key, value in cell["metadata"].items():
        found[f"metadata.{key}"] = json.dumps(value)
    return found


def expected_part(base: str | None, ours: str | None, theirs: str | None) -> tuple[Any, bool]:
    if ours in (base, theirs):
        return theirs, False
    if theirs == base:
        return ours, False
    return theirs, True


def valid(result: MergeResult) -> None:
    cell_ids = [cell["id"] for cell in result.notebook["cells"]]
    assert len(cell_ids) == len(set(cell_ids))
    nbformat.validate(copy.deepcopy(result.notebook))


def canonical(notebook: Notebook) -> str:
    return json.dumps(notebook, sort_keys=True)


@checks
@given(three_notebooks())
def test_a_side_that_changed_nothing_hands_over_the_other(
    notebooks: tuple[Notebook, Notebook, Notebook],
) -> None:
    base, ours, theirs = notebooks
    for merged, expected in (
        (merge_notebooks(base, ours, base), ours),
        (merge_notebooks(base, base, theirs), theirs),
        (merge_notebooks(base, theirs, theirs), theirs),
    ):
        assert merged.notebook == expected
        assert merged.conflicts == ()
        valid(merged)


@checks
@given(three_notebooks())
def test_no_edit_only_one_side_made_is_lost(
    notebooks: tuple[Notebook, Notebook, Notebook],
) -> None:
    base, ours, theirs = notebooks
    untouched = copy.deepcopy(notebooks)

    result = merge_notebooks(base, ours, theirs)

    valid(result)
    assert (base, ours, theirs) == untouched
    assert canonical(merge_notebooks(base, ours, theirs).notebook) == canonical(result.notebook)
    assert result.room_changed == (canonical(result.notebook) != canonical(ours))
    assert result.file_changed == (canonical(result.notebook) != canonical(theirs))
    by_id = [{cell["id"]: cell for cell in nb["cells"]} for nb in (base, ours, theirs)]
    merged = {cell["id"]: cell for cell in result.notebook["cells"]}
    for cell_id in set().union(*by_id):
        clashes = {c.part for c in result.conflicts if c.cell_id == cell_id}
        base_cell, our_cell, their_cell = (cells.get(cell_id) for cells in by_id)
        check_cell(merged.get(cell_id), base_cell, our_cell, their_cell, clashes)
    check_keys(
        result.notebook["metadata"],
        base["metadata"],
        ours["metadata"],
        theirs["metadata"],
        {c.part.removeprefix("notebook.") for c in result.conflicts if c.cell_id is None},
    )
    check_order(result, base, ours, theirs)


def check_cell(
    merged: dict[str, Any] | None,
    base: dict[str, Any] | None,
    ours: dict[str, Any] | None,
    theirs: dict[str, Any] | None,
    clashes: set[str],
) -> None:
    if ours is not None and theirs is not None:
        if "cell" in clashes:
            assert merged == theirs
            return
        assert merged is not None
        base_parts = {} if base is None else parts(base)
        our_parts, their_parts, merged_parts = parts(ours), parts(theirs), parts(merged)
        for part in set(our_parts) | set(their_parts) | set(base_parts):
            value, clash = expected_part(
                base_parts.get(part) if base is not None else object(),  # type: ignore[arg-type]
                our_parts.get(part),
                their_parts.get(part),
            )
            assert merged_parts.get(part) == value, part
            assert (part in clashes) == clash, part
        return
    present = ours if ours is not None else theirs
    if present is None:
        assert merged is None
    elif base is None:
        assert merged == present
    elif parts(present) == parts(base):
        assert merged is None and not clashes
    else:
        assert clashes == {"cell"}
        assert merged == (theirs if present is theirs else None)


def check_keys(
    merged: dict[str, Any],
    base: dict[str, Any],
    ours: dict[str, Any],
    theirs: dict[str, Any],
    clashes: set[str],
) -> None:
    for key in set(base) | set(ours) | set(theirs):
        value, clash = expected_part(
            *(json.dumps(side[key]) if key in side else None for side in (base, ours, theirs))
        )
        assert (json.dumps(merged[key]) if key in merged else None) == value
        assert (f"metadata.{key}" in clashes) == clash


def check_order(result: MergeResult, base: Notebook, ours: Notebook, theirs: Notebook) -> None:
    """The file's order holds unless only the room reordered; then the room's does."""

    def order(notebook: Notebook, among: set[str] | None = None) -> list[str]:
        return [c["id"] for c in notebook["cells"] if among is None or c["id"] in among]

    base_ids, our_ids, their_ids = set(order(base)), set(order(ours)), set(order(theirs))
    room_reordered = order(ours, base_ids) != order(base, our_ids)
    file_reordered = order(theirs, base_ids) != order(base, their_ids)
    leading = ours if room_reordered and not file_reordered else theirs
    merged_ids = set(order(result.notebook))
    assert order(result.notebook, set(order(leading))) == order(leading, merged_ids)
    order_clash = any(c.part == "order" for c in result.conflicts)
    assert order_clash == (
        room_reordered and file_reordered and order(ours, their_ids) != order(theirs, our_ids)
    )
