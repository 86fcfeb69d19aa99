"""Every case under tests/golden/sequences: one three-way edit, merged as an array's elements
(``merge_sequences``) and as a text's lines (``merge_text``), each compared exactly.

A case holds ``base``, ``ours`` (the room) and ``theirs`` (the file) as lists of short strings,
and under ``elements`` and ``lines`` what each merge makes of them (``merged``, ``conflicted``);
a text case's lines are those strings, each ended by a newline. The two rules differ where both
sides changed one part of the base, and the cases pin where.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ganymede.notebook.merge import merge_text
from ganymede.notebook.threeway import Side, merge_sequences

CASES = sorted((Path(__file__).parent.parent / "golden" / "sequences").glob("*.json"))


def _case(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _text(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def test_the_golden_cases_are_all_there() -> None:
    assert len(CASES) >= 10


@pytest.mark.parametrize("path", CASES, ids=lambda path: path.stem)
def test_elements_case(path: Path) -> None:
    case = _case(path)
    ours, theirs = case["ours"], case["theirs"]

    result = merge_sequences(case["base"], ours, theirs)

    merged = [(ours if pick.side is Side.OURS else theirs)[pick.index] for pick in result.picks]
    assert {"merged": merged, "conflicted": result.conflicted} == case["elements"]


@pytest.mark.parametrize("path", CASES, ids=lambda path: path.stem)
def test_lines_case(path: Path) -> None:
    case = _case(path)

    merged, conflicted = merge_text(*(_text(case[side]) for side in ("base", "ours", "theirs")))

    assert (merged, conflicted) == (_text(case["lines"]["merged"]), case["lines"]["conflicted"])
