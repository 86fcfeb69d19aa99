"""The names a parameters cell sets, against papermill's own reading of its test notebooks."""

from __future__ import annotations

import json
from pathlib import Path

import papermill
import pytest

from ganymede.execute.parameters import PARAMETERS_TAG, has_tag
from ganymede.execute.parameters_cell import defined_names, parameter_warnings
from tests.execute.notebooks import notebook

PAPERMILL_NOTEBOOKS = Path(papermill.__file__).parent / "tests" / "notebooks"


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("a = 1\nb: int = 2\nc: str", {"a", "b", "c"}),
        ("x, (y, *rest) = 1, (2, 3)\n[p, q] = 1, 2", {"x", "y", "rest", "p", "q"}),
        ("a = b = 0", {"a", "b"}),
        ("obj.attr = 1\nitems[0] = 2\nn += 1", set()),
        ("if True:\n    hidden = 1\ndef f():\n    local = 2", set()),
        ("%matplotlib inline\n!ls\nrate = 0.5", {"rate"}),
        ("good = 1\n= 2\nalso = 3", {"good", "also"}),
        ("", set()),
    ],
)
def test_names_set_at_the_top_level(source: str, names: set[str]) -> None:
    assert defined_names(source) == names


@pytest.mark.parametrize(
    "name", ["simple_execute", "report_mode_test", "result_no_exec", "complex_parameters"]
)
def test_papermills_parameters_are_among_ours(name: str) -> None:
    path = PAPERMILL_NOTEBOOKS / f"{name}.ipynb"
    cells = json.loads(path.read_text())["cells"]
    cell = next(cell for cell in cells if has_tag(cell, PARAMETERS_TAG))
    ours = defined_names("".join(cell["source"]))
    theirs = set(papermill.inspect_notebook(str(path)))
    assert ours is not None
    assert theirs <= ours
    # papermill's line pattern misses ``d = a == 3`` in complex_parameters; ast does not
    assert ours - theirs <= {"d"}


def test_warnings_name_each_unknown_parameter() -> None:
    nb = notebook(("alpha = 1\nbeta = 2", ["parameters"]), "print(alpha)")
    assert parameter_warnings(nb, {"alpha": 3, "gamma": 4}) == [
        "passed unknown parameter 'gamma': the parameters cell does not set it"
    ]
    assert parameter_warnings(nb, {}) == []


def test_no_parameters_cell_is_one_warning() -> None:
    nb = notebook("alpha = 1")
    assert parameter_warnings(nb, {"alpha": 3, "gamma": 4}) == [
        "no cell is tagged 'parameters': the parameters are injected at the top"
    ]
