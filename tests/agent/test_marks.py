"""Read marks: new ids per read, the agent's own changes moving only what they touched."""

from __future__ import annotations

import itertools

from ganymede.agent import CellState, MarkBook, Reader, changed_since, report_changes
from ganymede.agent.marks import KEPT_MARKS


def _book() -> MarkBook:
    counter = itertools.count()
    return MarkBook(new_id=lambda: f"{next(counter):016x}")


def _cells(*ids: str) -> list[CellState]:
    return [CellState(cell_id, "code", f"source of {cell_id}") for cell_id in ids]


def test_each_read_makes_a_mark_that_names_its_notebook() -> None:
    book = _book()
    first = book.read("claude-code", "nb-1", _cells("a"))
    second = book.read("claude-code", "nb-1", _cells("a", "b"))
    other = book.read("claude-code", "nb-2", _cells("x"))

    assert first.id != second.id and len(second.id) == 16
    assert book.current("claude-code", "nb-1") == second
    assert book.get(first.id) == first and book.get(other.id).notebook == "nb-2"  # type: ignore[union-attr]
    assert book.notebooks("claude-code") == ["nb-1", "nb-2"]
    assert book.current("cursor", "nb-1") is None


def test_old_marks_are_forgotten_past_the_limit() -> None:
    book = _book()
    marks = [book.read("claude-code", "nb", _cells("a")) for _ in range(KEPT_MARKS + 2)]

    assert book.get(marks[0].id) is None and book.get(marks[1].id) is None
    assert all(book.get(mark.id) == mark for mark in marks[2:])


def test_own_changes_move_the_mark_but_keep_others_news() -> None:
    book = _book()
    book.read("claude-code", "nb", _cells("a", "b", "c", "d"))
    # Meanwhile Thomas moved d to the top and deleted c; then the agent edits b and adds n after it.
    edited_b = CellState("b", "code", "new b")
    added_n = CellState("n", "code", "n")
    now = [_cells("d")[0], _cells("a")[0], edited_b, added_n]

    book.own_change("claude-code", "nb", now, {"b", "n"})

    mark = book.current("claude-code", "nb")
    assert mark is not None
    assert [state.id for state in mark.states] == ["a", "b", "n", "c", "d"]
    report = report_changes(mark.states, now, {}, Reader("claude-code"))
    assert [(change.id, [c.value for c in change.change]) for change in report] == [
        ("d", ["moved"]),
        ("c", ["deleted"]),
    ]


def test_own_delete_and_move_to_the_top() -> None:
    book = _book()
    book.read("claude-code", "nb", _cells("a", "b", "c"))
    now = _cells("c", "a")

    book.own_change("claude-code", "nb", now, {"b", "c"})

    mark = book.current("claude-code", "nb")
    assert mark is not None and [state.id for state in mark.states] == ["c", "a"]
    assert report_changes(mark.states, now, {}, Reader("claude-code")) == []


def test_edit_check_needs_the_cell_as_last_read() -> None:
    book = _book()
    mark = book.read("claude-code", "nb", _cells("a"))

    assert not changed_since(mark, _cells("a")[0])
    assert changed_since(mark, CellState("a", "code", "Thomas typed here"))
    assert changed_since(mark, CellState("a", "markdown", "source of a"))
    assert changed_since(mark, CellState("z", "code", "never read"))
    assert changed_since(None, _cells("a")[0])


def test_marks_follow_a_new_notebook_key() -> None:
    book = _book()
    mark = book.read("claude-code", "old-id", _cells("a"))

    book.rekey("old-id", "new-id")

    assert book.current("claude-code", "new-id") is not None
    assert book.get(mark.id).notebook == "new-id"  # type: ignore[union-attr]
    assert book.current("claude-code", "old-id") is None
