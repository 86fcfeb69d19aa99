"""Reading a room's changed file while it settles, so taking the change in starts half done.

The watcher hands a room its file's change only once the file has been quiet for the settle
time (half a second), since a program may write it in several steps. On a notebook of a few
thousand cells, parsing the new version, fingerprinting its cells for the merge and checking
its signature cost a fifth of that wait again, after it. So once the file has been quiet for a
moment (``READ_AHEAD_AFTER``) the room reads it ahead, in worker threads, and keeps what it
worked out keyed by the bytes. When the change settles, the room reads the file once more (a few
milliseconds): if it still holds those bytes, the work is done; if not (the program wrote again),
it was wasted and the room works on what the file holds now. Nothing is taken into the room
here, so a version read ahead can never be merged unless the file still holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from ganymede.errors import InvalidNotebook, NotebookNotFound
from ganymede.serve.rooms.document import DocumentKind, RoomDocument
from ganymede.serve.rooms.file import RoomFile
from ganymede.serve.rooms.trust import OutputTrust

READ_AHEAD_AFTER = 0.1  # seconds of quiet before a changing file is read ahead


class ReadAhead:
    """One room's reading ahead; ``file_changed`` at each change the watcher sees."""

    def __init__(
        self,
        file: RoomFile,
        document: RoomDocument,
        trust: OutputTrust,
        known: Callable[[], tuple[bytes, str]],
        log: logging.Logger,
    ) -> None:
        self._file = file
        self._document = document
        self._trust = trust
        self._known = known  # the bytes the room last read or wrote (its merge base), their hash
        self._log = log
        self._task: asyncio.Task[None] | None = None

    def file_changed(self) -> None:
        """Start over: what was being read ahead may already be out of date."""
        if self._task is not None:
            self._task.cancel()
        self._task = asyncio.create_task(self._read_ahead())

    async def finished(self) -> None:
        """Wait for the reading ahead under way, if any, without cutting it short.

        A take-in waits for it, so what it worked out is used there and let go with the rest.
        ``asyncio.wait`` neither raises the read-ahead's own end (cancelled by a newer one) nor
        swallows the caller's cancellation, as suppressing CancelledError around a shield did:
        the file watcher's report loop, stopped while a take-in waited here, went round again
        and the server's shutdown waited on it for ever.
        """
        while self._task is not None and not self._task.done():
            await asyncio.wait({self._task})

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _read_ahead(self) -> None:
        await asyncio.sleep(READ_AHEAD_AFTER)
        try:
            snapshot = await asyncio.to_thread(self._file.read)
            base, known_hash = self._known()
            if snapshot.hash == known_hash:
                return  # the room's own write
            version = await asyncio.to_thread(
                self._document.parse_apart, snapshot.data, snapshot.path
            )
            self._document.remember(version)
            await self._trust.check_ahead(snapshot.data, snapshot.path)
            if self._document.kind is DocumentKind.NOTEBOOK:
                # The merge compares the new version with the base too: fingerprint that too.
                await asyncio.to_thread(self._document.fingerprints, base, snapshot.path)
        except (OSError, NotebookNotFound, InvalidNotebook, UnicodeDecodeError):
            return  # half written, or gone: taking the change in will see to it
        except Exception:  # reading ahead only saves time; it must not take anything down
            self._log.exception("reading %s ahead of its settling failed", self._file.file_id)
