"""Merge rules the golden cases cannot show: how values compare, ids, placement, object sharing,
and the room's own document (jupyter_ydoc) handing back what it was given."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_ydoc import YNotebook
from nbformat.v4.rwbase import rejoin_lines

from ganymede.notebook.merge import merge_notebooks

GOLDEN_NOTEBOOKS = sorted(
    path
    for path in (Path(__file__).parent.parent / "golden" / "merge").iterdir()
    if (path / "base.json").is_file()
)


def code(cell_id: str, source: Any = "x = 1", **fields: Any) -> dict[str, Any]:
    cell = {"id": cell_id, "cell_type": "code", "metadata": {}, "source": source}
    cell |= {"outputs": [], "execution_count": None} | fields
    return cell


def markdown(cell_id: str, source: Any = "words", **fields: Any) -> dict[str, Any]:
    return {"id": cell_id, "cell_type": "markdown", "metadata": {}, "source": source} | fields


def notebook(*cells: dict[str, Any], minor: int = 5, **metadata: Any) -> dict[str, Any]:
    return {
        "cells": copy.deepcopy(list(cells)),
        "metadata": metadata,
        "nbformat": 4,
        "nbformat_minor": minor,
    }


def ids(result_notebook: dict[str, Any]) -> list[str]:
    return [cell["id"] for cell in result_notebook["cells"]]


def through_room(value: dict[str, Any]) -> dict[str, Any]:
    """The notebook as a room's document gives it back."""
    document = YNotebook()
    document.set(value)
    return document.get()


def joined(value: dict[str, Any]) -> str:
    return json.dumps(rejoin_lines(nbformat.from_dict(copy.deepcopy(value))), sort_keys=True)


@pytest.mark.parametrize("case", GOLDEN_NOTEBOOKS, ids=lambda path: path.name)
def test_the_room_document_of_a_notebook_is_the_same_notebook(case: Path) -> None:
    base, ours, theirs = (
        json.loads((case / f"{name}.json").read_text()) for name in ("base", "ours", "theirs")
    )
    for side in (base, ours):
        unchanged = merge_notebooks(side, through_room(side), side)
        assert (unchanged.room_changed, unchanged.file_changed) == (False, False)
        assert unchanged.conflicts == ()

    from_room = merge_notebooks(base, through_room(ours), theirs)
    from_file = merge_notebooks(base, ours, theirs)

    assert joined(from_room.notebook) == joined(from_file.notebook)
    assert from_room.conflicts == from_file.conflicts
    assert (from_room.room_changed, from_room.file_changed) == (
        from_file.room_changed,
        from_file.file_changed,
    )


def test_a_source_as_lines_equals_the_same_source_as_one_string() -> None:
    base = notebook(
        code(
            "a",
            ["x = 1\n", "y = 2"],
            outputs=[{"output_type": "stream", "name": "stdout", "text": ["1\n"]}],
        )
    )
    ours = notebook(
        code(
            "a",
            "x = 1\ny = 2",
            outputs=[{"output_type": "stream", "name": "stdout", "text": "1\n"}],
        )
    )
    theirs = notebook(
        code(
            "a",
            ["x = 1\n", "y = 2"],
            execution_count=3,
            outputs=[{"output_type": "stream", "name": "stdout", "text": ["1\n"]}],
        )
    )

    result = merge_notebooks(base, ours, theirs)

    assert result.notebook == theirs
    assert result.conflicts == ()
    assert (result.room_changed, result.file_changed) == (True, False)


def test_json_output_data_is_compared_as_data_not_as_lines() -> None:
    def with_json(value: Any) -> dict[str, Any]:
        output = {
            "output_type": "display_data",
            "metadata": {},
            "data": {"application/json": value},
        }
        return notebook(code("a", outputs=[output]))

    result = merge_notebooks(with_json(["a", "b"]), with_json(["a", "b"]), with_json("ab"))

    assert result.notebook == with_json("ab")
    assert result.room_changed


def test_a_whole_float_equals_the_int_a_room_gives_back() -> None:
    base = notebook(code("a", metadata={"width": 2.0}))
    ours = notebook(code("a", metadata={"width": 2}))
    theirs = notebook(code("a", "x = 2", metadata={"width": 3}))

    result = merge_notebooks(base, ours, theirs)

    assert result.notebook == theirs
    assert result.conflicts == ()


def test_true_is_not_one() -> None:
    base = notebook(code("a", metadata={"flag": 1}))
    ours = notebook(code("a", metadata={"flag": True}))
    theirs = notebook(code("a", "x = 2", metadata={"flag": 1}))

    result = merge_notebooks(base, ours, theirs)

    assert result.notebook["cells"][0]["metadata"] == {"flag": True}
    assert result.notebook["cells"][0]["source"] == "x = 2"


def test_empty_attachments_equal_none() -> None:
    base = notebook(markdown("m", attachments={}))
    ours = notebook(markdown("m"))
    theirs = notebook(markdown("m", "new words", attachments={}))

    result = merge_notebooks(base, ours, theirs)

    assert result.notebook == theirs
    assert result.conflicts == ()


def test_attachments_travel_with_the_source() -> None:
    picture = {"image/png": "iVBORw0KGgo="}
    base = notebook(markdown("m", "![a](attachment:a.png)", attachments={}))
    ours = notebook(markdown("m", "![a](attachment:a.png)", attachments={"a.png": picture}))
    theirs = notebook(markdown("m", "![a](attachment:a.png)", attachments={}, metadata={"k": 1}))

    result = merge_notebooks(base, ours, theirs)

    assert result.notebook["cells"][0]["attachments"] == {"a.png": picture}
    assert result.notebook["cells"][0]["metadata"] == {"k": 1}
    nbformat.validate(copy.deepcopy(result.notebook))


def test_a_cell_both_added_with_one_id_merges_part_by_part() -> None:
    base = notebook(code("a"))
    ours = notebook(code("a"), code("new", "room", metadata={"tags": ["t"], "k": 1}))
    theirs = notebook(code("a"), code("new", "file", metadata={"tags": ["t"], "k": 2}))

    result = merge_notebooks(base, ours, theirs)

    assert result.notebook == theirs
    assert [(c.cell_id, c.part) for c in result.conflicts] == [
        ("new", "source"),
        ("new", "metadata.k"),
    ]


def test_repeated_ids_are_renamed_alike_on_every_side() -> None:
    base = notebook(code("a", "first"), code("a", "second"))
    ours = notebook(code("a", "first"), code("a", "second, edited"))
    theirs = notebook(code("a", "first"), code("a", "second"))

    result = merge_notebooks(base, ours, theirs)

    assert result.notebook == notebook(code("a", "first"), code("a-2", "second, edited"))
    assert result.conflicts == ()
    assert result.room_changed and result.file_changed


def test_a_renamed_id_skips_ids_already_taken() -> None:
    base = notebook(code("a"), code("a-2"))
    theirs = notebook(code("a"), code("a-2"), code("a", "copy"))

    result = merge_notebooks(base, base, theirs)

    assert ids(result.notebook) == ["a", "a-2", "a-3"]
    nbformat.validate(copy.deepcopy(result.notebook))


def test_a_renamed_long_id_stays_within_64_characters() -> None:
    long_id = "x" * 64
    base = notebook(code(long_id))
    theirs = notebook(code(long_id), code(long_id, "copy"))

    result = merge_notebooks(base, base, theirs)

    assert ids(result.notebook) == [long_id, "x" * 62 + "-2"]
    nbformat.validate(copy.deepcopy(result.notebook))


def test_a_room_cell_follows_its_nearest_surviving_predecessor() -> None:
    base = notebook(code("a"), code("b"), code("c"))
    ours = notebook(code("a"), code("b"), code("room"), code("c"))
    theirs = notebook(code("a"), code("c"), code("file"))

    result = merge_notebooks(base, ours, theirs)

    assert ids(result.notebook) == ["a", "room", "c", "file"]


def test_room_cells_added_at_the_top_stay_at_the_top_in_their_order() -> None:
    base = notebook(code("a"), code("b"))
    ours = notebook(code("r1"), code("r2"), code("a"), code("b"))
    theirs = notebook(code("f"), code("a"), code("b"))

    result = merge_notebooks(base, ours, theirs)

    assert ids(result.notebook) == ["r1", "r2", "f", "a", "b"]


def test_a_file_before_4_5_wins_even_when_the_room_is_newer() -> None:
    ours = notebook(code("a", "room"))
    theirs = notebook(minor=4)
    theirs["cells"] = [{k: v for k, v in code("a", "file").items() if k != "id"}]

    result = merge_notebooks(ours, ours, theirs)

    assert result.file_wins_outright
    assert result.notebook == theirs
    assert result.conflicts == ()  # the room had no unsaved edits to lose
    assert (result.room_changed, result.file_changed) == (True, False)


def test_the_result_shares_nothing_with_the_inputs() -> None:
    base = notebook(code("a", metadata={"tags": ["x"]}), markdown("m"), title={"t": 1})
    ours = notebook(code("a", metadata={"tags": ["x"]}), markdown("m", "room"), title={"t": 1})
    theirs = notebook(code("a", metadata={"tags": ["y"]}), markdown("m"), title={"t": 1})
    untouched = copy.deepcopy((base, ours, theirs))

    result = merge_notebooks(base, ours, theirs)
    result.notebook["cells"][0]["metadata"]["tags"].append("z")
    result.notebook["cells"][1]["source"] = "changed"
    result.notebook["metadata"]["title"]["t"] = 2

    assert (base, ours, theirs) == untouched
