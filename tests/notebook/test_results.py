"""Named results: the golden case, scrapbook's own reader as a reference, and a real kernel."""

from __future__ import annotations

import copy
import json
from typing import Any

import nbformat
import pytest
import scrapbook
from nbclient import NotebookClient

from ganymede.notebook.nbio import parse_notebook
from ganymede.notebook.results import RESULT_MIME, read_results, results_of_output
from tests.notebook.golden import GOLDEN_NOTEBOOK, assert_golden

RESULTS = GOLDEN_NOTEBOOK / "results"


def golden_notebook() -> dict[str, Any]:
    path = RESULTS / "results.ipynb"
    return parse_notebook(path.read_bytes(), path.name)


def test_golden_results_last_output_of_a_name_wins() -> None:
    results = read_results(golden_notebook()["cells"])
    assert_golden(json.dumps(results, indent=1) + "\n", RESULTS / "results.json")


def test_scrapbook_reads_the_same_scraps_as_we_do() -> None:
    """scrapbook knows its own MIMEs and papermill's record, not ours: compare without ours."""
    notebook = copy.deepcopy(golden_notebook())
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(RESULT_MIME, None)
    reference = scrapbook.read_notebook(nbformat.from_dict(notebook)).scraps.data_dict
    assert reference == {"config": {"k": "v"}, "label": "first", "total": 4, "legacy": True}
    assert read_results(notebook["cells"]) == reference


@pytest.mark.parametrize(
    "output",
    [
        {"output_type": "stream", "name": "stdout", "text": "x"},
        {"output_type": "error", "ename": "E", "evalue": "", "traceback": []},
        {"output_type": "display_data", "metadata": {}, "data": {RESULT_MIME: {"value": 1}}},
        {"output_type": "display_data", "data": {RESULT_MIME: {"name": 3, "value": 1}}},
        {"output_type": "display_data", "metadata": {}, "data": {RESULT_MIME: ["name", "value"]}},
        {"output_type": "display_data", "metadata": {},
         "data": {"application/scrapbook.scrap.json+json": {"name": "n"}}},
        {"output_type": "display_data", "metadata": {}, "data": {}},
        {"output_type": "display_data"},
    ],
)  # fmt: skip
def test_outputs_that_publish_nothing(output: dict[str, Any]) -> None:
    assert results_of_output(output) == []


def test_one_output_with_every_kind_applies_ours_then_scrapbook_then_papermill() -> None:
    output = {
        "output_type": "execute_result",
        "execution_count": 1,
        "metadata": {},
        "data": {
            "application/papermill.record+json": {"a": "papermill", "b": 2},
            "application/scrapbook.scrap.text+json": {"name": "a", "data": "scrap"},
            RESULT_MIME: {"name": "a", "value": None},
        },
    }
    assert results_of_output(output) == [("a", None), ("a", "scrap"), ("a", "papermill"), ("b", 2)]
    assert read_results([{"cell_type": "code", "outputs": [output]}]) == {"a": "papermill", "b": 2}


def test_markdown_cells_and_cells_without_outputs_are_skipped() -> None:
    fake = {"output_type": "display_data", "data": {RESULT_MIME: {"name": "x", "value": 1}}}
    cells = [{"cell_type": "markdown", "outputs": [fake]}, {"cell_type": "code"}]
    assert read_results(cells) == {}


def test_results_published_by_a_real_kernel() -> None:
    source = "\n".join(
        [
            "import scrapbook as sb",
            "from IPython.display import display",
            f"mime = {RESULT_MIME!r}",
            "display({mime: {'name': 'n', 'value': [1, 2]}, 'text/plain': 'n'}, raw=True)",
            "sb.glue('label', 'from scrapbook')",
            "sb.glue('n', {'k': 1})",
            "display({mime: {'name': 'label', 'value': 'ours, last'}}, raw=True)",
        ]
    )
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    NotebookClient(notebook, kernel_name="python3", timeout=60).execute()
    assert read_results(notebook.cells) == {"n": {"k": 1}, "label": "ours, last"}
