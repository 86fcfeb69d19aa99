"""Change reports against the golden cases in tests/golden/changes, and the pieces they use.

A case holds the agent's ``mark`` and the notebook ``now`` (cells as ``[id, cell_type, source,
run]``), who last wrote each cell (``authors``: ``[name, kind, at]`` per part), the ``reader``,
the ``expected`` report and, where it matters, the ``line`` that ends a tool reply.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ganymede.agent import (
    Author,
    AuthorKind,
    CellAuthors,
    CellState,
    Reader,
    Stamp,
    addresses_agent,
    cell_state,
    changed_line,
    join_names,
    report_changes,
    request_names,
)

CASES = sorted((Path(__file__).parent.parent / "golden" / "changes").glob("*.json"))


def _states(cells: list[list[str]]) -> list[CellState]:
    return [CellState(id=i, cell_type=t, source=s, run=r) for i, t, s, r in cells]


def _stamp(raw: list[Any] | None) -> Stamp | None:
    if raw is None:
        return None
    name, kind, at = raw
    return Stamp(Author(name, AuthorKind(kind)), float(at))


def _authors(raw: dict[str, dict[str, list[Any]]]) -> dict[str, CellAuthors]:
    return {
        cell_id: CellAuthors(**{part: _stamp(stamp) for part, stamp in parts.items()})
        for cell_id, parts in raw.items()
    }


def _reader(raw: dict[str, Any]) -> Reader:
    return Reader(
        name=raw["name"],
        request_names=tuple(raw.get("request_names", [raw["name"]])),
        session_started=raw.get("session_started"),
        done_requests=frozenset(raw.get("done_requests", [])),
    )


def test_there_are_golden_cases() -> None:
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=lambda path: path.stem)
def test_golden_case(case: Path) -> None:
    data = json.loads(case.read_text(encoding="utf-8"))

    mark, now = _states(data["mark"]), _states(data["now"])
    authors, reader = _authors(data["authors"]), _reader(data["reader"])

    report = report_changes(mark, now, authors, reader, since=data.get("since"))

    assert [change.to_json() for change in report] == data["expected"]
    if "line" in data:
        assert changed_line(report, data["mark_id"], data.get("path")) == data["line"]


def test_cell_state_tells_runs_apart_and_joins_list_sources() -> None:
    cell = {"id": "a", "cell_type": "code", "source": ["x = 1\n", "x"], "outputs": []}
    never_run = cell_state({**cell, "execution_count": None})
    ran_once = cell_state({**cell, "execution_count": 1})
    ran_again = cell_state({**cell, "execution_count": 2})
    same_output_again = cell_state({**cell, "execution_count": 2})

    assert never_run.source == "x = 1\nx" and never_run.run == ""
    assert ran_once.run and ran_once.run != ran_again.run
    assert same_output_again == ran_again
    markdown = cell_state({"id": "m", "cell_type": "markdown", "source": "# t", "metadata": {}})
    assert markdown.run == ""


def test_a_long_reordering_reports_only_the_cells_that_jumped() -> None:
    mark = [CellState(str(n), "code", str(n)) for n in range(2000)]
    now = [*mark[1:1000], mark[0], *mark[1000:]]

    report = report_changes(mark, now, {}, Reader("claude-code"))

    assert [(change.id, change.index) for change in report] == [("0", 999)]


@pytest.mark.parametrize(
    ("source", "addressed"),
    [
        ("@agent check the 2019 rows", True),
        ("\n  @AGENT, please", True),
        ("@claude look", True),
        ("@claude-code look", True),
        ("@agents look", False),
        ("email me @agent", False),
        ("@", False),
        ("", False),
    ],
)
def test_addresses_agent(source: str, addressed: bool) -> None:
    assert addresses_agent(source, request_names("claude-code")) is addressed


def test_names_join_as_a_sentence() -> None:
    assert join_names(["Thomas"]) == "Thomas"
    assert join_names(["Thomas", "Maya"]) == "Thomas and Maya"
    assert join_names(["Thomas", "Maya", "kernel"]) == "Thomas, Maya and kernel"
    assert request_names("cursor") == ("cursor",)
