"""Attribution on real shared notebooks: updates from other documents, stamped as they land."""

from __future__ import annotations

from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import Map

from ganymede.agent import (
    Author,
    AuthorKind,
    CellAuthors,
    CellState,
    Reader,
    Stamp,
    notebook_states,
    report_changes,
)
from ganymede.agent.attribution import NotebookAttribution, taken_in
from ganymede.agent.changes import fingerprints

THOMAS = Author("Thomas", AuthorKind.PERSON)
MAYA = Author("Maya", AuthorKind.PERSON)


def _cell(cell_id: str, source: str, cell_type: str = "code") -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": cell_type, "id": cell_id, "source": source, "metadata": {}}
    if cell_type == "code":
        cell.update(outputs=[], execution_count=None)
    return cell


class Room:
    """A server-side notebook and the author of the update being applied, as a room has."""

    def __init__(self, *cells: dict[str, Any]) -> None:
        self.notebook = YNotebook()
        self.notebook.set(
            {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        )
        self.writing: Author | None = None
        self.clock = 0.0
        self.attribution = NotebookAttribution(
            self.notebook.ycells, lambda: self.writing, clock=lambda: self.clock
        )

    def client(self) -> YNotebook:
        """A client's copy, synced with the room."""
        copy = YNotebook()
        copy.ydoc.apply_update(self.notebook.ydoc.get_update())
        return copy

    def receive(self, client: YNotebook, author: Author | None, before: bytes) -> None:
        """Apply what ``client`` changed since ``before`` as coming from ``author``."""
        self.clock += 1
        self.writing = author
        try:
            self.notebook.ydoc.apply_update(client.ydoc.get_update(before))
        finally:
            self.writing = None


def test_a_clients_edits_are_stamped_with_its_author() -> None:
    room = Room(_cell("a", "x = 1"), _cell("b", "# notes", "markdown"))
    thomas = room.client()
    before = thomas.ydoc.get_state()
    thomas.ycells[0]["source"].insert(5, "0")
    room.receive(thomas, THOMAS, before)

    authors = room.attribution.authors()
    assert authors["a"].source is not None and authors["a"].source.author == THOMAS
    assert authors["a"].ran is None and "b" not in authors


def test_outputs_count_as_a_run_and_inserts_as_placing() -> None:
    room = Room(_cell("a", "x"), _cell("b", "y"))
    maya = room.client()
    before = maya.ydoc.get_state()
    with maya.ydoc.transaction():
        maya.ycells[1]["execution_count"] = 1
        maya.ycells[1]["outputs"].append(
            Map({"output_type": "stream", "name": "stdout", "text": "hi"})
        )
        maya.ycells.insert(0, maya.create_ycell(_cell("n", "new")))
    room.receive(maya, MAYA, before)

    authors = room.attribution.authors()
    assert authors["b"].ran is not None and authors["b"].ran.author == MAYA
    assert authors["b"].source is None
    assert authors["n"].placed is not None and authors["n"].source is not None


def test_a_move_and_a_delete_are_placing_by_whoever_did_them() -> None:
    room = Room(_cell("a", "1"), _cell("b", "2"), _cell("c", "3"))
    mark = notebook_states(room.notebook.get())
    thomas = room.client()
    before = thomas.ydoc.get_state()
    with thomas.ydoc.transaction():  # JupyterLab moves a cell by re-inserting a copy
        moved = thomas.ycells[0].to_py()
        del thomas.ycells[0]
        thomas.ycells.insert(1, thomas.create_ycell(moved))
        del thomas.ycells[2]
    room.receive(thomas, THOMAS, before)

    report = report_changes(
        mark, notebook_states(room.notebook.get()), room.attribution.authors(), Reader("agent")
    )
    assert [(entry.id, entry.change, entry.by) for entry in report] == [
        ("a", ("moved",), ("Thomas",)),
        ("c", ("deleted",), ("Thomas",)),
    ]
    assert room.attribution.authors()["a"].source is None  # a move writes no source


def test_unattributed_changes_keep_the_record_and_runs_can_be_stamped() -> None:
    room = Room(_cell("a", "x"))
    room.notebook.ycells[0]["source"] = "changed by the room itself"

    assert room.attribution.authors() == {}
    room.attribution.record_run("a", MAYA)
    ran = room.attribution.authors()["a"].ran
    assert ran is not None and ran.author == MAYA


def test_closed_attribution_stops_recording() -> None:
    room = Room(_cell("a", "x"))
    room.attribution.close()
    thomas = room.client()
    before = thomas.ydoc.get_state()
    thomas.ycells[0]["source"].insert(0, "y")
    room.receive(thomas, THOMAS, before)

    assert room.attribution.authors() == {}


def test_each_cell_knows_the_version_that_last_changed_it() -> None:
    room = Room(_cell("a", "x"), _cell("b", "y"))
    assert room.attribution.order() == ["a", "b"]
    assert room.attribution.cell_version("a") == 0

    room.notebook.ycells[1]["source"] = "y = 2"  # no author: still a change to that cell
    room.notebook.append_cell(_cell("c", "z"))
    room.notebook.ycells[0]["id"] = "renamed"

    versions = {cell_id: room.attribution.cell_version(cell_id) for cell_id in ("b", "c")}
    assert room.attribution.order() == ["renamed", "b", "c"]
    assert 0 < versions["b"] < versions["c"] < room.attribution.cell_version("renamed")
    assert room.attribution.version == room.attribution.cell_version("renamed")


def test_a_cells_run_version_moves_with_its_outputs_and_placing_not_its_typing() -> None:
    room = Room(_cell("a", "x"), _cell("b", "y"))
    assert room.attribution.run_version("a") == 0

    room.notebook.ycells[0]["source"] += " = 1"
    assert room.attribution.run_version("a") == 0 < room.attribution.cell_version("a")

    room.notebook.ycells[0]["execution_count"] = 1
    ran = room.attribution.run_version("a")
    assert ran == room.attribution.cell_version("a") > 0

    room.notebook.ycells[0]["outputs"].append(Map({"output_type": "stream", "text": "1\n"}))
    assert room.attribution.run_version("a") > ran

    room.notebook.append_cell(_cell("c", "z"))
    assert room.attribution.run_version("c") == room.attribution.version


def test_what_changed_while_no_room_was_open_is_stamped_as_taken_in() -> None:
    before = fingerprints(
        [
            CellState("a", "code", "x = 1"),
            CellState("b", "code", "y = 2"),
            CellState("c", "markdown", "# notes"),
            CellState("d", "code", "gone = 1"),
        ]
    )
    now = fingerprints(
        [
            CellState("c", "markdown", "# notes"),
            CellState("a", "code", "x = 10"),
            CellState("b", "code", "y = 2", run="ran-once"),
            CellState("n", "code", "new = 1"),
        ]
    )
    kept = {"a": CellAuthors(source=Stamp(THOMAS, 1.0)), "b": CellAuthors(source=Stamp(MAYA, 2.0))}
    program = Author("another program", AuthorKind.PROGRAM)

    authors = taken_in(kept, before, now, program, 5.0)

    assert authors["a"] == CellAuthors(source=Stamp(program, 5.0))
    assert authors["b"] == CellAuthors(source=Stamp(MAYA, 2.0), ran=Stamp(program, 5.0))
    assert authors["c"] == CellAuthors(placed=Stamp(program, 5.0))  # it moved to the top
    assert authors["d"] == CellAuthors(placed=Stamp(program, 5.0))  # deleted
    assert authors["n"] == CellAuthors(source=Stamp(program, 5.0), placed=Stamp(program, 5.0))
    assert kept["a"] == CellAuthors(source=Stamp(THOMAS, 1.0))  # the record is left as it was


def test_fingerprints_keep_no_source_and_still_tell_a_changed_one_apart() -> None:
    source = "x = 1\n" * 1000
    full = CellState("a", "code", source)
    [kept] = fingerprints([full])
    assert kept.source == "" and kept == full
    assert CellState("a", "code", source + " ") != kept


def test_a_reopened_rooms_attribution_starts_from_the_closed_ones() -> None:
    room = Room(_cell("a", "x = 1"), _cell("b", "y = 2"))
    carried = {
        "a": CellAuthors(source=Stamp(MAYA, 1.0)),
        "b": CellAuthors(source=Stamp(MAYA, 1.0), ran=Stamp(MAYA, 1.5)),
    }
    room.attribution.carry_over(lambda: carried)
    thomas = room.client()
    before = thomas.ydoc.get_state()
    thomas.ycells[1]["source"].insert(5, "0")
    room.receive(thomas, THOMAS, before)
    authors = room.attribution.authors()
    assert authors["a"].source == Stamp(MAYA, 1.0)
    assert authors["b"].source == Stamp(THOMAS, 1.0)  # its own stamp wins, part by part
    assert authors["b"].ran == Stamp(MAYA, 1.5)
