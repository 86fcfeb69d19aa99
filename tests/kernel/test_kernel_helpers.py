"""``ganymede.kernel``: what a notebook calls inside its kernel (run on real kernels in
tests/execute; here the parts that need no kernel, and the import cost)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from ganymede import kernel
from ganymede.notebook import results


def test_params_are_empty_without_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GANYMEDE_PARAMS", raising=False)
    assert kernel.params() == {}


def test_params_come_from_the_json_object(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GANYMEDE_PARAMS", json.dumps({"a": [1, None], "b": "x"}))
    assert kernel.params() == {"a": [1, None], "b": "x"}


@pytest.mark.parametrize(
    ("text", "message"),
    [("{oops", "not valid JSON"), ("[1, 2]", "must hold a JSON object, not a JSON list")],
)
def test_params_that_are_not_a_json_object_are_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    monkeypatch.setenv("GANYMEDE_PARAMS", text)
    with pytest.raises(ValueError, match=message):
        kernel.params()


@pytest.mark.parametrize("value", [{1, 2}, object(), math.nan, {"k": b"bytes"}])
def test_a_result_that_is_not_json_is_refused(value: object) -> None:
    with pytest.raises(TypeError, match="result 'r': the value must be JSON"):
        kernel.result("r", value)


def test_a_result_needs_a_name() -> None:
    with pytest.raises(TypeError, match="non-empty string"):
        kernel.result("", 1)


def test_the_result_mime_is_the_one_the_reader_reads() -> None:
    assert kernel.RESULT_MIME == results.RESULT_MIME


def test_importing_it_loads_only_the_standard_library() -> None:
    script = (
        "import sys\nbefore = set(sys.modules)\nimport ganymede.kernel\n"
        "print('\\n'.join(name for name in set(sys.modules) - before "
        "if name.split('.')[0] not in sys.stdlib_module_names))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.split()
    assert sorted(loaded) == [
        "ganymede",
        "ganymede.kernel",
        "ganymede.notebook",
        "ganymede.notebook.results",
    ]
