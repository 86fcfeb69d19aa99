"""Parsing notebooks: every bad input is an InvalidNotebook naming the file, never a warning."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from ganymede.errors import InvalidNotebook
from ganymede.notebook.nbio import dumps_notebook, parse_notebook

HEX_ID = re.compile(r"^[0-9a-f]{8}$")


def notebook(cells: list[dict[str, Any]], minor: int = 5) -> dict[str, Any]:
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": minor}


def markdown(source: str | list[str], cell_id: str | None = None) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": "markdown", "metadata": {}, "source": source}
    if cell_id is not None:
        cell["id"] = cell_id
    return cell


def reason(text: str | bytes) -> str:
    with pytest.raises(InvalidNotebook) as caught:
        parse_notebook(text, "dir/bad.ipynb")
    assert caught.value.path == "dir/bad.ipynb"
    assert str(caught.value).startswith("dir/bad.ipynb: not a valid notebook: ")
    return caught.value.reason


def test_invalid_json() -> None:
    assert reason('{"nbformat": 4,').startswith("not JSON (")
    assert reason(b"\xff\xfe{").startswith("not JSON (")
    assert reason("").startswith("not JSON (")


@pytest.mark.parametrize("text", ["[]", '"x"', "{}", '{"cells": []}'])
def test_json_that_is_not_a_notebook(text: str) -> None:
    assert reason(text) == "JSON, but not a notebook (no nbformat key)"


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ('"4"', "nbformat is '4', not a version number"),
        ("true", "nbformat is True, not a version number"),
        ("5", "nbformat 5 is not a version this reader knows"),
        ("0", "nbformat 0 is not a version this reader knows"),
    ],
)
def test_unknown_versions(version: str, expected: str) -> None:
    assert reason(f'{{"nbformat": {version}, "nbformat_minor": 0}}') == expected


def test_a_notebook_failing_validation_names_the_problem() -> None:
    bad = notebook([{"cell_type": "bogus", "id": "a", "metadata": {}, "source": ""}])
    assert "bogus" in reason(json.dumps(bad))
    missing_outputs = notebook([{"cell_type": "code", "id": "a", "metadata": {}, "source": "",
                                 "execution_count": None}])  # fmt: skip
    assert "outputs" in reason(json.dumps(missing_outputs))
    assert "metadata" in reason('{"nbformat": 4, "nbformat_minor": 5, "cells": []}')
    bad_output = notebook([{"cell_type": "code", "id": "a", "metadata": {}, "source": "",
                            "execution_count": None, "outputs": [5]}])  # fmt: skip
    assert reason(json.dumps(bad_output)) == "cell 0: output 0: must be an object"
    bad_id = notebook([markdown("x", "not valid!")])
    assert "not valid!" in reason(json.dumps(bad_id))


@pytest.mark.parametrize(
    "raw",
    [
        {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": "abc"},
        {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [1, None]},
        {"nbformat": 4, "nbformat_minor": 4, "metadata": [], "cells": []},
        {"nbformat": 4},
        {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"id": ["x"]}]},
        {"nbformat": 1, "nbformat_minor": 0},
        {"nbformat": 2, "nbformat_minor": 0},
        {"nbformat": 3, "nbformat_minor": 0},
        {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [7]}]},
    ],
)
def test_malformed_structures_are_invalid_not_crashes(raw: dict[str, Any]) -> None:
    assert reason(json.dumps(raw))


def test_nbformat_3_is_upgraded() -> None:
    v3 = {
        "nbformat": 3,
        "nbformat_minor": 0,
        "metadata": {"name": "old"},
        "worksheets": [
            {
                "metadata": {},
                "cells": [
                    {"cell_type": "heading", "level": 2, "metadata": {}, "source": "Title"},
                    {
                        "cell_type": "code",
                        "collapsed": False,
                        "input": ["x = 1\n", "x + 1"],
                        "language": "python",
                        "metadata": {},
                        "prompt_number": 3,
                        "outputs": [
                            {"output_type": "pyout", "prompt_number": 3, "text": "2",
                             "metadata": {}},
                            {"output_type": "stream", "stream": "stdout", "text": "hi\n"},
                        ],
                    },
                ],
            }
        ],
    }  # fmt: skip
    node = parse_notebook(json.dumps(v3), "old.ipynb")
    assert (node["nbformat"], node["nbformat_minor"]) == (4, 5)
    heading, code = node["cells"]
    assert (heading["cell_type"], heading["source"]) == ("markdown", "## Title")
    assert (code["source"], code["execution_count"]) == ("x = 1\nx + 1", 3)
    assert code["outputs"] == [
        {"output_type": "execute_result", "execution_count": 3, "metadata": {},
         "data": {"text/plain": "2"}},
        {"output_type": "stream", "name": "stdout", "text": "hi\n"},
    ]  # fmt: skip
    assert all(HEX_ID.match(cell["id"]) for cell in node["cells"])
    assert heading["id"] != code["id"]


def test_nbformat_4_4_without_ids_stays_as_it_is() -> None:
    node = parse_notebook(json.dumps(notebook([markdown(["a\n", "b"])], minor=4)), "n.ipynb")
    assert node["nbformat_minor"] == 4
    assert "id" not in node["cells"][0]
    assert node["cells"][0]["source"] == "a\nb"


def test_nbformat_4_5_missing_or_duplicate_ids_get_fresh_ones() -> None:
    # nbformat itself warns (MissingIDFieldWarning, DuplicateCellId) here; pytest turns
    # warnings into errors, so these passing shows parse_notebook repairs without warning.
    cells = [markdown("a"), markdown("b", "keep"), markdown("c", "keep"), markdown("d", "e")]
    node = parse_notebook(json.dumps(notebook(cells)), "n.ipynb")
    ids = [cell["id"] for cell in node["cells"]]
    assert ids[1] == "keep"
    assert ids[3] == "e"
    assert HEX_ID.match(ids[0])
    assert HEX_ID.match(ids[2])
    assert len(set(ids)) == 4


def test_list_sources_and_outputs_are_joined() -> None:
    code = {"cell_type": "code", "id": "c", "metadata": {}, "execution_count": 1,
            "source": ["a\n", "b"], "outputs": [
                {"output_type": "stream", "name": "stdout", "text": ["x\n", "y\n"]},
                {"output_type": "display_data", "metadata": {},
                 "data": {"text/plain": ["p\n", "q"], "image/png": "AAAA\n"}},
            ]}  # fmt: skip
    node = parse_notebook(json.dumps(notebook([code])), "n.ipynb")
    cell = node["cells"][0]
    assert cell["source"] == "a\nb"
    assert cell["outputs"][0]["text"] == "x\ny\n"
    assert cell["outputs"][1]["data"] == {"text/plain": "p\nq", "image/png": "AAAA\n"}


def test_a_file_round_trips_through_dumps(tmp_path: Any) -> None:
    cells = [markdown("# T\n\nbody", "m"), {"cell_type": "code", "id": "c", "metadata": {},
             "execution_count": None, "outputs": [], "source": "print('é')"}]  # fmt: skip
    path = tmp_path / "n.ipynb"
    path.write_text(dumps_notebook(notebook(cells)), encoding="utf-8")
    text = path.read_bytes()
    assert text.endswith(b"}\n")
    node = parse_notebook(text, str(path))
    assert node == notebook(cells)
    assert dumps_notebook(node).encode() == text
