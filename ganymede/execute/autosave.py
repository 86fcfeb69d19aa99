"""Saving a notebook while it runs, so a run that is killed leaves the cells it finished.

papermill saves its output notebook after every cell and every so often during a long cell;
users rely on it to see a run's progress and to keep what a killed run did. ``Autosave`` is the
writer behind ``RunRequest.autosave``: the runner says when (after each cell, and at most every
``autosave_every`` seconds while a cell prints), this says where and how. Each save is atomic,
so the file is always a whole notebook; the write happens in a worker thread, off the event
loop, so cells keep running while it syncs to disk. Saves asked for while one is being written
coalesce into one of the latest state: a notebook with large outputs is not serialized again for
every cell it runs faster than the disk takes it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ganymede.core.files import atomic_write
from ganymede.notebook.nbio import dumps_notebook


class Autosave:
    """Saves one run's notebook to ``target``, the latest state winning; ``aclose`` to finish.

    Call ``save`` on the event loop's thread (the notebook is serialized there, between two of
    the runner's changes to it); ``aclose`` waits until what was asked for is on disk, and must
    be awaited before the run's final write, which it would otherwise race.
    """

    def __init__(self, target: Path) -> None:
        self.target = target
        self.failure: OSError | None = None
        """The first save that failed (full disk, no permission); later saves still try."""
        self._latest: dict[str, Any] | None = None
        self._writing: asyncio.Future[None] | None = None
        self._again = False

    def save(self, notebook: dict[str, Any]) -> None:
        """Save ``notebook`` as it stands now, or as soon as the save under way is done."""
        self._latest = notebook
        if self._writing is not None:
            self._again = True
            return
        self._begin()

    def _begin(self) -> None:
        assert self._latest is not None
        data = dumps_notebook(self._latest).encode("utf-8")
        self._again = False
        loop = asyncio.get_running_loop()
        self._writing = loop.run_in_executor(None, atomic_write, self.target, data)
        self._writing.add_done_callback(self._written)

    def _written(self, writing: asyncio.Future[None]) -> None:
        self._writing = None
        if not writing.cancelled():
            error = writing.exception()
            if isinstance(error, OSError) and self.failure is None:
                self.failure = error
        if self._again:
            self._begin()

    async def aclose(self) -> None:
        """Wait until every save asked for is written (or has failed)."""
        while self._writing is not None:
            await asyncio.wait([self._writing])
            await asyncio.sleep(0)  # let the done callback start a coalesced save
