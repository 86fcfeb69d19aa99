"""Saving a notebook while it runs, so a run that is killed leaves the cells it finished.

papermill saves its output notebook after every cell and every so often during a long cell;
users rely on it to see a run's progress and to keep what a killed run did. ``Autosave`` is the
writer behind ``RunRequest.autosave``: the runner says when (after each cell, and at most every
``autosave_every`` seconds while a cell prints), this says where and how.

Each save is atomic, so the file is always a whole notebook, but not synced to disk: it has to
survive the process being killed, not a power cut, and the run's final write (synced) replaces
it. Serializing the notebook is the cost that grows: every save writes every cell, so saving
after each of a hundred quick cells would cost the square of the notebook. Saves are therefore
paced so serializing takes at most ``LOOP_SHARE`` of the run's time on the event loop: after a
save that took ``t`` seconds to serialize, the next begins no sooner than ``t / LOOP_SHARE``
later, and one asked for meanwhile is put off until then (the latest state is what is written).
The write itself happens in a worker thread, so cells keep running while it goes to disk.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from ganymede.core.files import atomic_write
from ganymede.notebook.nbio import dumps_notebook

LOOP_SHARE = 0.02


class Autosave:
    """Saves one run's notebook to ``target``, the latest state winning; ``aclose`` to finish.

    Call ``save`` on the event loop's thread (the notebook is serialized there, between two of
    the runner's changes to it). ``aclose`` waits for the write under way and drops a save not
    yet begun: the caller writes the final notebook next, which a late save would overwrite.
    """

    def __init__(self, target: Path) -> None:
        self.target = target
        self.failure: OSError | None = None
        """The first save that failed (full disk, no permission); later saves still try."""
        self._latest: dict[str, Any] | None = None
        self._pending = False
        self._writing: asyncio.Future[bool] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._next_at = 0.0

    def save(self, notebook: dict[str, Any]) -> None:
        """Save ``notebook`` as it stands, now or once the pacing allows."""
        self._latest = notebook
        self._pending = True
        self._schedule()

    def _schedule(self) -> None:
        if not self._pending or self._writing is not None or self._timer is not None:
            return  # the write under way or the timer comes back here when done
        loop = asyncio.get_running_loop()
        wait = self._next_at - loop.time()
        if wait > 0:
            self._timer = loop.call_later(wait, self._timer_fired)
        else:
            self._begin(loop)

    def _timer_fired(self) -> None:
        self._timer = None
        self._schedule()

    def _begin(self, loop: asyncio.AbstractEventLoop) -> None:
        assert self._latest is not None
        started = time.perf_counter()
        data = dumps_notebook(self._latest).encode("utf-8")
        self._next_at = loop.time() + (time.perf_counter() - started) / LOOP_SHARE
        self._pending = False
        self._writing = loop.run_in_executor(None, self._write, data)
        self._writing.add_done_callback(self._written)

    def _write(self, data: bytes) -> bool:
        return atomic_write(self.target, data, durable=False)

    def _written(self, writing: asyncio.Future[bool]) -> None:
        self._writing = None
        if not writing.cancelled():
            error = writing.exception()
            if isinstance(error, OSError) and self.failure is None:
                self.failure = error
        self._schedule()

    async def aclose(self) -> None:
        """Drop a save not yet begun and wait for the one being written, if any."""
        self._pending = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._writing is not None:
            await asyncio.wait([self._writing])
