"""The autosave's debounce: one save per burst of edits, none without one."""

from __future__ import annotations

from ganymede.serve.rooms.autosave import Autosave
from tests.serve.rooms.client import eventually


async def test_a_burst_of_edits_saves_once_and_a_later_edit_saves_again() -> None:
    saves: list[int] = []

    async def save() -> None:
        saves.append(len(saves))

    async with Autosave(0.05, save) as autosave:
        for _ in range(5):
            autosave.poke()
        await eventually(lambda: saves == [0], "the first save")
        autosave.poke()
        await eventually(lambda: saves == [0, 1], "the second save")
    assert saves == [0, 1]


async def test_stopping_abandons_a_pending_save() -> None:
    saves: list[None] = []

    async def save() -> None:
        saves.append(None)

    autosave = Autosave(60.0, save)
    await autosave.start()
    autosave.poke()
    await autosave.stop()
    assert saves == []
