"""Autosave: saves put off by the pacing land with the latest state; ``aclose`` waits for the
write under way and drops the rest, so the final write is never overwritten."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from ganymede.execute.autosave import Autosave
from tests.execute.notebooks import notebook


def count_on_disk(target: Path) -> int | None:
    return json.loads(target.read_text())["cells"][0]["execution_count"]


async def test_saves_put_off_land_with_the_latest_state(tmp_path: Path) -> None:
    target = tmp_path / "out.ipynb"
    autosave = Autosave(target)
    nb = notebook("a = 1")
    for count in range(1, 6):
        nb["cells"][0]["execution_count"] = count
        autosave.save(nb)
    deadline = asyncio.get_running_loop().time() + 30
    while not (target.exists() and count_on_disk(target) == 5):
        assert asyncio.get_running_loop().time() < deadline, "the last state never landed"
        await asyncio.sleep(0.01)
    await autosave.aclose()
    assert autosave.failure is None


async def test_aclose_leaves_a_whole_notebook_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.ipynb"
    autosave = Autosave(target)
    nb = notebook("a = 1")
    for count in range(1, 6):
        nb["cells"][0]["execution_count"] = count
        autosave.save(nb)
    await autosave.aclose()
    assert count_on_disk(target) in range(1, 6)
    assert [path.name for path in tmp_path.iterdir()] == ["out.ipynb"]


async def test_a_failed_save_is_recorded_not_raised(tmp_path: Path) -> None:
    autosave = Autosave(tmp_path / "missing" / "out.ipynb")
    autosave.save(notebook("a = 1"))
    await autosave.aclose()
    assert isinstance(autosave.failure, FileNotFoundError)
