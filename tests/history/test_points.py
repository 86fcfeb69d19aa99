"""The pure history logic: which points the bounds drop or compact, and replaying a point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pycrdt import Doc, Text

from ganymede.history.points import (
    Bounds,
    PointInfo,
    PointKind,
    plan,
    point_at,
    replay,
    replay_ids,
    snapshot,
    step_points,
)
from tests.conftest import GOLDEN

CASES = sorted((GOLDEN / "history").glob("*.json"))


def infos(rows: list[list[object]]) -> list[PointInfo]:
    return [
        PointInfo(int(i), str(epoch), float(at), "someone", PointKind(str(kind)), int(size))  # type: ignore[arg-type]
        for i, epoch, at, kind, size in rows
    ]


@pytest.mark.parametrize("case", CASES, ids=[case.stem for case in CASES])
def test_the_plan_for_each_golden_history(case: Path) -> None:
    data = json.loads(case.read_text())
    days, megabytes = data["bounds"]
    todo = plan(infos(data["points"]), Bounds(days, megabytes), data["now"])
    expected = data["expected"]
    assert list(todo.drop) == expected["drop"]
    assert [list(run) for run in todo.compact] == expected["compact"]


def edits(texts: list[str]) -> list[bytes]:
    """The updates of a document whose text is set to each of ``texts`` in turn."""
    doc = Doc()
    doc["source"] = text = Text()
    updates: list[bytes] = []
    doc.observe(lambda event: updates.append(event.update))
    for target in texts:
        with doc.transaction():
            del text[:]
            text += target
    return updates


def test_replaying_an_epoch_to_a_point_gives_the_document_then() -> None:
    updates = edits(["one", "two", "three"])
    assert str(replay(updates[:2]).get("source", type=Text)) == "two"


def test_a_snapshot_replays_as_the_updates_it_replaces() -> None:
    updates = edits(["x" * 1000, "short"])
    merged = snapshot(updates)
    assert str(replay([merged]).get("source", type=Text)) == "short"
    assert len(merged) < sum(len(update) for update in updates)


def test_the_timeline_skips_bookkeeping_and_a_point_takes_its_bookkeeping_along() -> None:
    points = infos(
        [[1, "a", 1, "load", 1], [2, "a", 2, "state", 1], [3, "a", 3, "edit", 1],
         [4, "a", 4, "state", 1], [5, "b", 5, "load", 1], [6, "a", 6, "edit", 1]]
    )  # fmt: skip
    assert [p.id for p in step_points(points)] == [1, 3, 5, 6]
    assert replay_ids(points, points[0]) == [1, 2]
    assert replay_ids(points, points[2]) == [1, 2, 3, 4]
    assert replay_ids(points, points[4]) == [5]
    assert point_at(points, 3.5) == points[2]
    assert point_at(points, 0.5) is None
