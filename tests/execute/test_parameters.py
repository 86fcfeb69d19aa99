"""The injected-parameters cell, against golden files and papermill's own translator."""

from __future__ import annotations

import math
from pathlib import Path

import nbformat
import pytest
from papermill.translators import PythonTranslator

from ganymede.errors import UsageError
from ganymede.execute.parameters import (
    inject_parameters,
    papermill_metadata,
    parameters_source,
    python_literal,
)
from tests.execute.notebooks import notebook

GOLDEN = Path(__file__).parent / "golden"

PARAMS = {
    "alpha": 0.6,
    "count": 3,
    "name": 'it\'s "quoted"',
    "flag": True,
    "missing": None,
    "nested": {"list": [1, 2.5, False, None], "text": "a\nb"},
    "empty": [],
}


def test_source_matches_golden() -> None:
    assert parameters_source(PARAMS) == (GOLDEN / "injected_parameters.txt").read_text()


def test_source_evaluates_back_to_the_json_values() -> None:
    namespace: dict[str, object] = {}
    exec(parameters_source(PARAMS), namespace)
    assert {name: namespace[name] for name in PARAMS} == PARAMS


def test_literals_agree_with_papermill_for_json_scalars_and_containers() -> None:
    for value in (1, -2, 0.25, True, False, None, "x'y", [1, "a"], {"k": [None]}):
        assert eval(python_literal(value)) == eval(PythonTranslator.translate(value))


def test_non_finite_floats_stay_python() -> None:
    assert math.isnan(eval(python_literal(math.nan)))
    assert eval(python_literal(-math.inf)) == -math.inf


@pytest.mark.parametrize("name", ["not-a-name", "2nd", "class", ""])
def test_a_name_python_cannot_assign_is_refused(name: str) -> None:
    with pytest.raises(UsageError, match="not a Python name"):
        parameters_source({name: 1})


def test_a_value_that_is_not_json_is_refused() -> None:
    with pytest.raises(UsageError, match="JSON"):
        parameters_source({"when": object()})


def test_injected_after_the_first_parameters_cell() -> None:
    nb = notebook("import os", ("a = 1", ["parameters"]), "print(a)", ("b = 2", ["parameters"]))
    injected = inject_parameters(nb, {"a": 5})
    sources = [cell["source"] for cell in injected["cells"]]
    assert sources == ["import os", "a = 1", "# Parameters\na = 5\n", "print(a)", "b = 2"]
    cell = injected["cells"][2]
    assert cell["metadata"] == {"tags": ["injected-parameters"]}
    assert cell["id"] not in {c["id"] for c in nb["cells"]}
    nbformat.validate(injected)
    assert len(nb["cells"]) == 4, "the input notebook is left as it was"


def test_a_previous_injected_cell_is_replaced() -> None:
    nb = notebook(("a = 1", ["parameters"]), ("# Parameters\na = 2\n", ["injected-parameters"]))
    injected = inject_parameters(nb, {"a": 3})
    assert [cell["source"] for cell in injected["cells"]] == ["a = 1", "# Parameters\na = 3\n"]


def test_no_parameters_cell_means_the_injected_cell_goes_first() -> None:
    nb = notebook("a = 1", "print(a)")
    injected = inject_parameters(nb, {"a": 3})
    sources = [cell["source"] for cell in injected["cells"]]
    assert sources == ["# Parameters\na = 3\n", "a = 1", "print(a)"]
    assert injected["cells"][0]["metadata"] == {"tags": ["injected-parameters"]}
    nbformat.validate(injected)


def test_papermill_metadata_holds_only_this_runs_parameters() -> None:
    before = {"kernelspec": {"name": "python3"}, "papermill": {"exception": True, "parameters": {}}}
    after = papermill_metadata(before, {"n": 3})
    assert after == {"kernelspec": {"name": "python3"}, "papermill": {"parameters": {"n": 3}}}
    assert before["papermill"] == {"exception": True, "parameters": {}}


def test_no_parameters_means_no_injected_cell_and_a_stale_one_goes() -> None:
    nb = notebook(("a = 1", ["parameters"]), ("# Parameters\na = 2\n", ["injected-parameters"]))
    assert [cell["source"] for cell in inject_parameters(nb, {})["cells"]] == ["a = 1"]


def test_notebooks_before_4_5_get_no_cell_ids() -> None:
    nb = notebook(("a = 1", ["parameters"]), minor=4)
    injected = inject_parameters(nb, {"a": 2})
    assert "id" not in injected["cells"][1]
    nbformat.validate(injected)
