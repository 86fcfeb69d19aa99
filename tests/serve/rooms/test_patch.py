"""Small updates that bring a shared notebook or text to a target, checked on a second replica."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from jupyter_ydoc import YNotebook
from pycrdt import Doc, Text, TransactionEvent

from ganymede.serve.rooms.patch import TextEdit, patch_notebook, patch_text, text_edits


def code(cell_id: str, source: str, outputs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "id": cell_id,
        "source": source,
        "metadata": {},
        "outputs": outputs or [],
        "execution_count": None,
    }


def markdown(cell_id: str, source: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "id": cell_id, "source": source, "metadata": {}}


def notebook(*cells: dict[str, Any], minor: int = 5, **metadata: Any) -> dict[str, Any]:
    """A notebook with the metadata keys jupyter_ydoc adds when they are missing."""
    kernelspec = {"name": "python3", "display_name": "P"}
    return {
        "cells": list(cells),
        "metadata": {"kernelspec": kernelspec, "language_info": {"name": ""}, **metadata},
        "nbformat": 4,
        "nbformat_minor": minor,
    }


def stream(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text}


class Replica:
    """A room's notebook and a client's copy fed only by the updates the room's edits make."""

    def __init__(self, content: dict[str, Any]) -> None:
        self.room = YNotebook()
        self.room.set(content)
        self.client = YNotebook(Doc())
        self.client.ydoc.apply_update(self.room.ydoc.get_update())
        self.updates: list[bytes] = []
        self.room.ydoc.observe(self._forward)

    def _forward(self, event: TransactionEvent) -> None:
        self.updates.append(event.update)
        self.client.ydoc.apply_update(event.update)

    def patch(self, target: dict[str, Any]) -> None:
        wanted = copy.deepcopy(target)
        patch_notebook(self.room, target)
        assert target == wanted, "the target must not be changed"
        assert self.room.get() == target
        assert self.client.get() == target


BASE = notebook(
    code("a", "x = 1\nprint('é')\n"),
    markdown("b", "# Title 📊"),
    code("c", "y = 2", [stream("out\n")]),
)


@pytest.mark.parametrize(
    "target",
    [
        pytest.param(
            notebook(*BASE["cells"][:2], code("new", "z = 3"), BASE["cells"][2]), id="insert"
        ),
        pytest.param(notebook(BASE["cells"][0], BASE["cells"][2]), id="delete"),
        pytest.param(notebook(BASE["cells"][2], BASE["cells"][0], BASE["cells"][1]), id="move"),
        pytest.param(notebook(), id="delete-all"),
        pytest.param(
            notebook(code("a", "x = 1 # 中文\nprint('é👍🏽')\n"), *BASE["cells"][1:]),
            id="emoji-cjk",
        ),
        pytest.param(
            notebook(BASE["cells"][0], markdown("b", "# 📊 Tïtle\nmore"), BASE["cells"][2]),
            id="source-after-emoji",
        ),
        pytest.param(
            notebook(
                *BASE["cells"][:2],
                {**code("c", "y = 2", [stream("out\n"), stream("更多 ✓\n")]), "execution_count": 3},
            ),
            id="outputs-appended",
        ),
        pytest.param(
            notebook(
                *BASE["cells"][:2],
                code(
                    "c",
                    "y = 2",
                    [
                        {
                            "output_type": "execute_result",
                            "data": {"text/plain": "2"},
                            "metadata": {},
                            "execution_count": 1,
                        }
                    ],
                ),
            ),
            id="outputs-replaced",
        ),
        pytest.param(
            notebook(
                {**BASE["cells"][0], "metadata": {"tags": ["x"], "collapsed": True}},
                *BASE["cells"][1:],
                language_info={"name": "python"},
            ),
            id="metadata",
        ),
        pytest.param(
            notebook(BASE["cells"][0], {**BASE["cells"][1], "cell_type": "raw"}, BASE["cells"][2]),
            id="cell-type",
        ),
    ],
)
def test_patching_reaches_the_target_on_both_replicas(target: dict[str, Any]) -> None:
    replica = Replica(BASE)
    replica.patch(target)
    assert len(replica.updates) == 1  # one transaction, so one update to broadcast


def test_a_source_edit_is_a_text_edit_not_a_new_cell() -> None:
    replica = Replica(BASE)
    cell_list_changes: list[object] = []
    # A shallow observer is not told of changes within cells; the subscriptions must be held.
    subscriptions = [replica.client.ycells.observe(cell_list_changes.append)]
    text_changes: list[object] = []
    source = replica.client.ycells[0]["source"]
    subscriptions.append(source.observe(lambda event: text_changes.append(event.delta)))
    replica.patch(notebook(code("a", "x = 10\nprint('é')\n"), *BASE["cells"][1:]))
    assert cell_list_changes == []
    assert text_changes == [[{"retain": 5}, {"insert": "0"}]]
    replica.client.ycells.unobserve(subscriptions[0])
    source.unobserve(subscriptions[1])


def test_nothing_to_change_makes_no_update() -> None:
    replica = Replica(BASE)
    replica.patch(copy.deepcopy(BASE))
    assert replica.updates == []


def test_a_notebook_without_cell_ids_is_matched_by_position() -> None:
    old = notebook(code("a", "1"), code("b", "2"), minor=4)
    replica = Replica(old)
    without_ids = [{k: v for k, v in cell.items() if k != "id"} for cell in old["cells"]]
    target = notebook(
        {**without_ids[0], "source": "one"},
        without_ids[1],
        {**without_ids[1], "source": "3"},
        minor=4,
    )
    replica.patch(target)
    replica.patch(notebook(target["cells"][0], minor=4))


def test_a_client_typing_meanwhile_keeps_its_keystrokes() -> None:
    replica = Replica(BASE)
    with replica.client.ydoc.transaction():
        replica.client.ycells[2]["source"].insert(0, "# typed\n")
    typed = replica.client.ydoc.get_update(replica.room.ydoc.get_state())
    patch_notebook(replica.room, notebook(code("a", "x = 2\nprint('é')\n"), *BASE["cells"][1:]))
    replica.room.ydoc.apply_update(typed)
    expected = ["x = 2\nprint('é')\n", "# Title 📊", "# typed\ny = 2"]
    for side in (replica.room, replica.client):
        assert [cell["source"] for cell in side.get()["cells"]] == expected


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("", "abc"),
        ("abc", ""),
        ("a📊b", "a📊📊b"),
        ("中文文本\n第二行\n", "中文本\n第二行!\n第三行\n"),
        ("👍🏽 ok", "👍🏿 ok"),
        ("line\n" * 50 + "end", "line\n" * 20 + "changed\n" + "line\n" * 30 + "end"),
        ("x" * 3000 + "\n", "y" * 3000 + "\n"),
    ],
)
def test_text_patches_with_byte_offsets(old: str, new: str) -> None:
    doc = Doc()
    text = doc.get("t", type=Text)
    text += old
    patch_text(text, new)
    assert str(text) == new


def test_text_edits_touch_only_what_changed() -> None:
    assert text_edits("hello world", "hello brave world") == [TextEdit(6, 6, "brave ")]
    assert text_edits("same", "same") == []


def test_random_text_patches_reach_their_target_on_a_replica() -> None:
    """Seeded random edits over multi-byte characters, replayed on a second document."""
    alphabet = ["a", "b", "\n", "é", "中", "文", "📊", "👍🏽", " "]
    chooser = random.Random(20261202)
    for _ in range(300):
        old = "".join(chooser.choices(alphabet, k=chooser.randrange(0, 40)))
        new = "".join(chooser.choices(alphabet, k=chooser.randrange(0, 40)))
        doc, replica = Doc(), Doc()
        text = doc.get("t", type=Text)
        text += old
        replica.apply_update(doc.get_update())
        state = doc.get_state()
        patch_text(text, new)
        replica.apply_update(doc.get_update(state))
        assert str(text) == str(replica.get("t", type=Text)) == new


def test_random_cell_reorders_inserts_deletes_and_edits_reach_their_target() -> None:
    chooser = random.Random(7)
    for round_ in range(60):
        cells = [code(f"c{i}", f"x = {i} 📊") for i in range(chooser.randrange(0, 8))]
        replica = Replica(notebook(*cells))
        target = chooser.sample(cells, k=chooser.randrange(0, len(cells) + 1))
        for index in range(chooser.randrange(0, 3)):
            target.insert(
                chooser.randrange(0, len(target) + 1), markdown(f"n{round_}-{index}", "新")
            )
        target = [
            {**cell, "source": cell["source"] + " 改"} if chooser.random() < 0.3 else cell
            for cell in target
        ]
        replica.patch(notebook(*target))


def test_a_long_notebook_with_few_cells_to_compare_changes_only_those() -> None:
    """Cells named unchanged are not read; of the few others, each is read and compared alone,
    and only the one that differs changes."""
    cells = [code(f"c{index}", f"x = {index}", [stream(f"{index}\n")]) for index in range(40)]
    replica = Replica(notebook(*cells))
    target = notebook(*cells[:7], code("c7", "x = 'seven'", [stream("7\n")]), *cells[8:])
    changed_cells: list[object] = []
    subscription = replica.client.ycells.observe_deep(
        lambda events: changed_cells.extend(event.path[0] for event in events)
    )
    unchanged = {cell["id"] for cell in cells} - {"c3", "c7"}
    patch_notebook(replica.room, target, unchanged=unchanged)
    replica.client.ycells.unobserve(subscription)
    assert replica.room.get() == target
    assert replica.client.get() == target
    assert set(changed_cells) == {7}
    assert len(replica.updates) == 1
