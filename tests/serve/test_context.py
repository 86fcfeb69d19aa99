"""The extension's stop step: every hook runs, newest first, even after one fails."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from ganymede.config import Config
from ganymede.fileid import FileIdStore
from ganymede.serve.context import GanymedeContext


async def test_stop_runs_every_hook_newest_first_then_closes_the_store(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "a.ipynb").write_text("{}")
    store = FileIdStore(tmp_path)
    context = GanymedeContext(Config(), tmp_path, store, logging.getLogger("test"))
    ran: list[str] = []

    async def save_rooms() -> None:
        ran.append("rooms")

    async def broken() -> None:
        ran.append("broken")
        raise OSError("disk full")

    async def stop_watcher() -> None:
        ran.append("watcher")

    context.on_stop(save_rooms)
    context.on_stop(broken)
    context.on_stop(stop_watcher)
    await context.stop()
    assert ran == ["watcher", "broken", "rooms"]
    assert "a stop step failed" in caplog.text
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        store.index("a.ipynb")
