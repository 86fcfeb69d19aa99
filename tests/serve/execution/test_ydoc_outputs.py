"""Canned iopub messages applied to a YNotebook, as a room's run writes them."""

from __future__ import annotations

from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import TransactionEvent

from ganymede.execute.outputs import CellOutputs, DisplayRegistry
from ganymede.serve.execution.ydoc_outputs import (
    RoomCellOutputs,
    RoomDisplays,
    cell_as_room_has_it,
    find_cell,
    start_running,
)
from ganymede.serve.rooms.document import DocumentKind, RoomDocument


def notebook(*cell_ids: str) -> RoomDocument:
    """A room's document holding code cells of these ids, each with an old output."""
    document = RoomDocument(DocumentKind.NOTEBOOK)
    cells = [
        {
            "cell_type": "code",
            "id": cell_id,
            "source": "",
            "metadata": {},
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "old\n"}],
            "execution_count": 1,
        }
        for cell_id in cell_ids
    ]
    document.shared.set({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    return document


def cell(shared: YNotebook, cell_id: str) -> dict[str, Any]:
    ycell = find_cell(shared, cell_id)
    assert ycell is not None
    return cell_as_room_has_it(ycell)


def stream(text: str, name: str = "stdout") -> dict[str, str]:
    return {"name": name, "text": text}


def test_start_running_clears_outputs_and_count() -> None:
    document = notebook("a")
    shared = document.notebook
    ycell = find_cell(shared, "a")
    assert ycell is not None
    start_running(ycell)
    assert cell(shared, "a") | {"metadata": {}} == {
        "cell_type": "code",
        "id": "a",
        "source": "",
        "metadata": {},
        "outputs": [],
        "execution_count": None,
        "execution_state": "running",
    }


def test_streams_join_in_one_text_and_carriage_returns_rewrite_only_the_last_line() -> None:
    document = notebook("a")
    shared = document.notebook
    outputs = RoomCellOutputs(document, "a", RoomDisplays())
    outputs.handle([("clear_output", {"wait": False})])
    texts = []
    for text in ["a📊\n10%", "\r20%", "\r3", "0%", "\r30%\ndone\n", "x\b", "y\n"]:
        outputs.handle([("stream", stream(text))])
        texts.append(cell(shared, "a")["outputs"][0]["text"])
    assert texts == [
        "a📊\n10%",
        "a📊\n20%",
        "a📊\n3",
        "a📊\n30%",
        "a📊\n30%\ndone\n",
        "a📊\n30%\ndone\n",
        "a📊\n30%\ndone\ny\n",
    ]
    outputs.handle([("stream", stream("oops\n", "stderr"))])
    outputs.handle([("stream", stream("more\n"))])
    assert [o["name"] for o in cell(shared, "a")["outputs"]] == ["stdout", "stderr", "stdout"]


def test_each_handing_over_is_one_update_and_text_grows_at_its_end() -> None:
    document = notebook("a")
    shared = document.notebook
    outputs = RoomCellOutputs(document, "a", RoomDisplays())
    outputs.handle([("clear_output", {"wait": False})])
    outputs.handle([("stream", stream("first\n"))])
    updates: list[bytes] = []

    def collect(event: TransactionEvent) -> None:
        updates.append(event.update)

    subscription = shared.ydoc.observe(collect)
    outputs.handle([("stream", stream("second\n"))])
    shared.ydoc.unobserve(subscription)
    assert len(updates) == 1
    assert cell(shared, "a")["outputs"] == [
        {"output_type": "stream", "name": "stdout", "text": "first\nsecond\n"}
    ]


MIXED: list[tuple[str, dict[str, Any]]] = [
    ("clear_output", {"wait": False}),
    ("stream", stream("a\n10%")),
    ("stream", stream("\r20%")),
    ("stream", stream("\r")),
    ("stream", stream("30%\n")),
    ("stream", stream("warn\n", "stderr")),
    ("stream", stream("x\b")),
    ("stream", stream("y\n")),
    ("clear_output", {"wait": True}),
    ("stream", stream("kept\n")),
    ("display_data", {"data": {"text/plain": "d"}, "metadata": {}}),
    ("stream", stream("end")),
]


def test_messages_handed_over_together_give_what_they_give_one_by_one_in_one_update() -> None:
    one_by_one, together = notebook("a"), notebook("a")
    singly = RoomCellOutputs(one_by_one, "a", RoomDisplays())
    for message in MIXED:
        singly.handle([message])
    updates: list[bytes] = []

    def collect(event: TransactionEvent) -> None:
        updates.append(event.update)

    subscription = together.doc.observe(collect)
    RoomCellOutputs(together, "a", RoomDisplays()).handle(MIXED)
    together.doc.unobserve(subscription)
    assert len(updates) == 1
    assert cell(together.notebook, "a") == cell(one_by_one.notebook, "a")
    assert [o.get("text") for o in cell(together.notebook, "a")["outputs"]] == [
        "kept\n",
        None,
        "end",
    ]


def test_the_room_and_the_headless_runner_build_the_same_outputs() -> None:
    document = notebook("a")
    shared = document.notebook
    room = RoomCellOutputs(document, "a", RoomDisplays())
    headless = CellOutputs([], DisplayRegistry())
    messages = [("execute_input", {"execution_count": 3}), *MIXED]
    messages.append(("execute_result", {"data": {"text/plain": "r"}, "metadata": {}}))
    for message in messages:
        room.handle([message])
        headless.handle(*message)
    headless.finish()
    assert cell(shared, "a")["outputs"] == headless.outputs
    assert headless.outputs[-1]["execution_count"] == 3


def test_ten_thousand_lines_handed_over_together_are_one_update() -> None:
    document = notebook("a")
    shared = document.notebook
    outputs = RoomCellOutputs(document, "a", RoomDisplays())
    outputs.handle([("clear_output", {"wait": False})])
    lines = [("stream", stream(f"{i}\n")) for i in range(10_000)]
    updates: list[bytes] = []

    def collect(event: TransactionEvent) -> None:
        updates.append(event.update)

    subscription = shared.ydoc.observe(collect)
    outputs.handle(lines)
    shared.ydoc.unobserve(subscription)
    assert len(updates) == 1
    expected = "".join(f"{i}\n" for i in range(10_000))
    assert cell(shared, "a")["outputs"] == [
        {"output_type": "stream", "name": "stdout", "text": expected}
    ]


def test_a_deferred_clear_waits_for_the_next_output() -> None:
    document = notebook("a")
    shared = document.notebook
    outputs = RoomCellOutputs(document, "a", RoomDisplays())
    outputs.handle([("clear_output", {"wait": True})])
    assert cell(shared, "a")["outputs"][0]["text"] == "old\n"
    outputs.handle([("stream", stream("new\n"))])
    assert cell(shared, "a")["outputs"] == [
        {"output_type": "stream", "name": "stdout", "text": "new\n"}
    ]


def test_a_display_update_reaches_an_earlier_cell_and_keeps_the_output_type() -> None:
    document = notebook("a", "b")
    shared = document.notebook
    displays = RoomDisplays()
    first = RoomCellOutputs(document, "a", displays)
    first.handle([("execute_input", {"execution_count": 4})])
    first.handle(
        [
            (
                "execute_result",
                {"data": {"text/plain": "1"}, "metadata": {}, "transient": {"display_id": "d"}},
            )
        ],
    )
    first.finish(4)
    second = RoomCellOutputs(document, "b", displays)
    second.handle(
        [
            (
                "update_display_data",
                {
                    "data": {"text/plain": "2"},
                    "metadata": {"m": 1},
                    "transient": {"display_id": "d"},
                },
            )
        ],
    )
    a = cell(shared, "a")
    assert a["outputs"][-1] == {
        "output_type": "execute_result",
        "execution_count": 4,
        "data": {"text/plain": "2"},
        "metadata": {"m": 1},
    }
    assert a["execution_count"] == 4 and a["execution_state"] == "idle"


def test_a_display_cleared_since_is_not_updated() -> None:
    document = notebook("a")
    shared = document.notebook
    displays = RoomDisplays()
    outputs = RoomCellOutputs(document, "a", displays)
    outputs.handle(
        [
            (
                "display_data",
                {"data": {"text/plain": "x"}, "metadata": {}, "transient": {"display_id": "d"}},
            )
        ],
    )
    outputs.handle([("clear_output", {"wait": False})])
    outputs.handle([("error", {"ename": "E", "evalue": "v", "traceback": ["t"]})])
    displays.update("d", {"data": {"text/plain": "y"}, "metadata": {}})
    assert cell(shared, "a")["outputs"] == [
        {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t"]}
    ]


def test_a_cell_moved_meanwhile_is_found_again_and_a_deleted_one_is_left_alone() -> None:
    document = notebook("a", "b")
    shared = document.notebook
    outputs = RoomCellOutputs(document, "a", RoomDisplays())
    outputs.handle([("stream", stream("before\n"))])
    moved = shared.get_cell(0)
    with shared.ydoc.transaction():
        del shared.ycells[0]
        shared.ycells.append(shared.create_ycell(moved))
    outputs.handle([("stream", stream("after\n"))])
    assert [o["text"] for o in cell(shared, "a")["outputs"]] == ["old\n", "before\n", "after\n"]
    del shared.ycells[1]
    outputs.handle([("stream", stream("gone\n"))])
    outputs.finish(3)
    assert [c["id"] for c in shared.get()["cells"]] == ["b"]


def test_a_display_update_reaches_a_document_rebuilt_since_it_was_shown() -> None:
    """Runs later, the room may have packed its idle document away and rebuilt it: the update
    goes to the live document, not the one the display was first shown in."""
    document = notebook("a", "b")
    displays = RoomDisplays()
    first = RoomCellOutputs(document, "a", displays)
    shown = {"data": {"text/plain": "1"}, "metadata": {}, "transient": {"display_id": "d"}}
    first.handle([("display_data", shown)])
    first.finish(1)
    document.pack_away()

    second = RoomCellOutputs(document, "b", displays)
    updated = {"data": {"text/plain": "2"}, "metadata": {}, "transient": {"display_id": "d"}}
    second.handle([("update_display_data", updated)])
    assert cell(document.notebook, "a")["outputs"][-1]["data"] == {"text/plain": "2"}
