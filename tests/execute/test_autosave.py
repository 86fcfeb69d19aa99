"""Autosave: saves coalesce into the latest state, and ``aclose`` waits until it is on disk."""

from __future__ import annotations

import json
from pathlib import Path

from ganymede.execute.autosave import Autosave
from tests.execute.notebooks import notebook


async def test_saves_coalesce_into_the_latest_state(tmp_path: Path) -> None:
    target = tmp_path / "out.ipynb"
    autosave = Autosave(target)
    nb = notebook("a = 1")
    for count in range(1, 6):
        nb["cells"][0]["execution_count"] = count
        autosave.save(nb)
    await autosave.aclose()
    assert json.loads(target.read_text())["cells"][0]["execution_count"] == 5
    assert autosave.failure is None


async def test_a_failed_save_is_recorded_not_raised(tmp_path: Path) -> None:
    autosave = Autosave(tmp_path / "missing" / "out.ipynb")
    autosave.save(notebook("a = 1"))
    await autosave.aclose()
    assert isinstance(autosave.failure, FileNotFoundError)
