"""Every case under tests/golden/merge: notebooks and text files, merged and compared exactly.

A notebook case holds ``base``, ``ours`` (the room), ``theirs`` (the file) and ``expected`` as
``.json``, the conflicts in ``conflicts.json`` and the result's flags in ``flags.json``; a text
case holds the same four as ``.txt`` and ``{"had_conflict": ...}`` in ``flags.json``.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from ganymede.notebook.merge import cell_fingerprint, merge_notebooks, merge_text

CASES = Path(__file__).parent.parent / "golden" / "merge"
NOTEBOOK_CASES = sorted(path for path in CASES.iterdir() if (path / "base.json").is_file())
# A file before nbformat 4.5 wins outright and a file's repeated ids are repaired, so for those
# cases a side that changed nothing does not simply hand over the other side.
IDENTITY_CASES = [
    path
    for path in NOTEBOOK_CASES
    if path.name not in ("nbformat-4.4-file-wins", "duplicate-id-in-file")
]
TEXT_CASES = sorted(path for path in CASES.iterdir() if (path / "base.txt").is_file())


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _text(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def test_the_golden_cases_are_all_there() -> None:
    assert len(NOTEBOOK_CASES) >= 25
    assert len(TEXT_CASES) >= 10
    assert {path.name for path in NOTEBOOK_CASES}.isdisjoint(path.name for path in TEXT_CASES)


@pytest.mark.parametrize("case", NOTEBOOK_CASES, ids=lambda path: path.name)
def test_notebook_case(case: Path) -> None:
    base, ours, theirs = (_json(case / f"{name}.json") for name in ("base", "ours", "theirs"))
    untouched = copy.deepcopy((base, ours, theirs))

    result = merge_notebooks(base, ours, theirs)

    assert result.notebook == _json(case / "expected.json")
    assert [dataclasses.asdict(conflict) for conflict in result.conflicts] == _json(
        case / "conflicts.json"
    )
    assert {
        "file_wins_outright": result.file_wins_outright,
        "room_changed": result.room_changed,
        "file_changed": result.file_changed,
    } == _json(case / "flags.json")
    assert (base, ours, theirs) == untouched
    nbformat.validate(copy.deepcopy(result.notebook))
    again = merge_notebooks(base, ours, theirs)
    assert json.dumps(again.notebook) == json.dumps(result.notebook)
    assert again.conflicts == result.conflicts


@pytest.mark.parametrize("case", NOTEBOOK_CASES, ids=lambda path: path.name)
def test_fingerprints_worked_out_beforehand_merge_the_same(case: Path) -> None:
    """A room hands over the base's and the file's fingerprints, computed while it settled."""
    sides = [_json(case / f"{name}.json") for name in ("base", "ours", "theirs")]
    prints = tuple([cell_fingerprint(cell) for cell in side["cells"]] for side in sides)
    given = merge_notebooks(*sides, fingerprints=(prints[0], None, prints[2]))
    all_given = merge_notebooks(*sides, fingerprints=prints)
    worked_out = merge_notebooks(*sides)
    assert given == worked_out == all_given


@pytest.mark.parametrize("case", IDENTITY_CASES, ids=lambda path: path.name)
def test_a_side_that_changed_nothing_takes_the_other(case: Path) -> None:
    base, ours, theirs = (_json(case / f"{name}.json") for name in ("base", "ours", "theirs"))
    room_only = merge_notebooks(base, ours, base)
    file_only = merge_notebooks(base, base, theirs)
    both_same = merge_notebooks(base, theirs, theirs)

    assert (room_only.notebook, room_only.conflicts) == (ours, ())
    assert (file_only.notebook, file_only.conflicts) == (theirs, ())
    assert (both_same.notebook, both_same.conflicts) == (theirs, ())
    assert not room_only.room_changed
    assert not file_only.file_changed
    assert not both_same.room_changed and not both_same.file_changed


@pytest.mark.parametrize("case", TEXT_CASES, ids=lambda path: path.name)
def test_text_case(case: Path) -> None:
    base, ours, theirs = (_text(case / f"{name}.txt") for name in ("base", "ours", "theirs"))

    merged, had_conflict = merge_text(base, ours, theirs)

    assert merged == _text(case / "expected.txt")
    assert had_conflict == _json(case / "flags.json")["had_conflict"]
    assert merge_text(base, ours, base) == (ours, False)
    assert merge_text(base, base, theirs) == (theirs, False)
