"""Noticing other programs' changes to the files of open rooms, once each change has settled.

A program that writes a notebook (an editor, ``git checkout``, an agent's script) often writes it
in several steps; reading it mid-way would merge a half-written file. So a file is reported only
once it has been quiet for ``settle`` seconds, and at the latest ``settle_max`` seconds after its
first change, so a file rewritten continuously is still taken in. Quiet counts from the write
itself, dated by the file's modification time: watchfiles hands a change over some tens of
milliseconds after it (its step), which need not be waited again. watchfiles watches only the
directories of open rooms (not recursively), and the set follows rooms as they open and close.

The watcher reports paths; telling a room's own writes apart is the room's business (it compares
the file's hash with what it last wrote), so nothing here needs to know who wrote what.

While the set of directories changes, watchfiles restarts and a write in between has no event.
So each file's stat (inode, size, mtime) is kept as of its watch and of each report, and after
every restart a file whose stat moved meanwhile is reported as changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import watchfiles

from ganymede.serve.service import Service, detached_task, event_within

SettledHandler = Callable[[Path], Awaitable[None]]
MAX_DETECTION_LAG = 0.1  # seconds a change may be dated back by its file's modification time
Signature = tuple[int, int, int] | None  # inode, size, mtime; None: no such file
log = logging.getLogger(__name__)


class Settler:
    """When each changed path is due: quiet for ``settle`` s, or ``settle_max`` s after its first
    change. Pure bookkeeping on the times it is given, so the rule is tested without a clock."""

    def __init__(self, settle: float, settle_max: float) -> None:
        self.settle = settle
        self.settle_max = settle_max
        self._first: dict[Path, float] = {}
        self._last: dict[Path, float] = {}

    def changed(self, path: Path, now: float) -> None:
        self._first.setdefault(path, now)
        self._last[path] = max(self._last.get(path, now), now)

    def due_at(self, path: Path) -> float:
        return min(self._last[path] + self.settle, self._first[path] + self.settle_max)

    def next_due(self) -> float | None:
        """The earliest time a pending path is due, or None when nothing is pending."""
        return min((self.due_at(path) for path in self._first), default=None)

    def take_due(self, now: float) -> list[Path]:
        """The paths due by ``now``, forgotten as they are handed out, oldest change first."""
        due = sorted((p for p in self._first if self.due_at(p) <= now), key=self._first.get)
        for path in due:
            del self._first[path], self._last[path]
        return due


def change_time(seen: float, age: float | None) -> float:
    """When a change seen at ``seen`` was made, the file's modification time being ``age``
    seconds old by the wall clock (None: unknown). No further back than the watcher's detection
    lag, and never later than seen: a file whose clock disagrees with this machine's (a network
    drive) is dated by when it was seen."""
    if age is None:
        return seen
    return seen - min(max(age, 0.0), MAX_DETECTION_LAG)


class FileWatcher(Service):
    """Watches files by watching their directories; calls ``on_settled(path)`` for each change.

    Use ``async with FileWatcher(...)`` or ``start()``/``stop()``. ``watch(path)`` and
    ``unwatch(path)`` may be called at any time; a directory is watched while any of its files is.
    """

    def __init__(
        self,
        on_settled: SettledHandler,
        *,
        on_changed: Callable[[Path], None] | None = None,
        settle: float = 0.5,
        settle_max: float = 5.0,
    ) -> None:
        """``on_changed(path)``, if given, hears of each change as it is seen, unsettled."""
        self._on_settled = on_settled
        self._on_changed = on_changed
        self._settler = Settler(settle, settle_max)
        self._files: dict[Path, int] = {}
        self._seen: dict[Path, Signature] = {}  # each file as of its watch or its last report
        self._wake = asyncio.Event()
        self._restart = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.started = asyncio.Event()

    def watch(self, path: Path) -> None:
        """Report changes to ``path`` (counted: each ``watch`` needs its ``unwatch``)."""
        path = path.absolute()
        self._files[path] = self._files.get(path, 0) + 1
        if self._files[path] == 1:
            self._seen[path] = _signature(path)
            self._restart.set()

    def unwatch(self, path: Path) -> None:
        path = path.absolute()
        count = self._files.get(path, 0) - 1
        if count > 0:
            self._files[path] = count
        else:
            self._files.pop(path, None)
            self._seen.pop(path, None)
            self._restart.set()

    async def start(self) -> None:
        self._tasks = [
            detached_task(self._watch_loop(), name="ganymede-watcher"),
            detached_task(self._report_loop(), name="ganymede-watcher-report"),
        ]
        self.started.set()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        self.started.clear()

    async def _watch_loop(self) -> None:
        """Run watchfiles over the current directories; start over when the set changes."""
        while True:
            self._restart.clear()
            directories = sorted({path.parent for path in self._files if path.parent.is_dir()})
            if not directories:
                await self._restart.wait()
                continue
            # awatch sets its watches before its first await, so this runs once they are set.
            asyncio.get_running_loop().call_soon(self._catch_up)
            async for changes in watchfiles.awatch(
                *directories,
                stop_event=self._restart,
                debounce=50,
                step=20,
                recursive=False,
                watch_filter=None,
            ):
                now, wall_clock = time.monotonic(), time.time()
                for _, changed in changes:
                    path = Path(changed)
                    if path in self._files:
                        self._settler.changed(path, change_time(now, _age(path, wall_clock)))
                        if self._on_changed is not None:
                            self._on_changed(path)
                self._wake.set()

    def _catch_up(self) -> None:
        """Count as changed the files whose stat moved while the watch was down."""
        now = time.monotonic()
        for path, seen in self._seen.items():
            if _signature(path) != seen:
                self._settler.changed(path, now)
                self._wake.set()

    async def _report_loop(self) -> None:
        """Hand each settled path to the handler, one at a time, in the order they changed."""
        while True:
            self._wake.clear()  # before looking, so a change arriving meanwhile is not missed
            due = self._settler.next_due()
            timeout = None if due is None else max(0.0, due - time.monotonic())
            await event_within(self._wake, timeout)
            for path in self._settler.take_due(time.monotonic()):
                if path not in self._files:
                    continue
                self._seen[path] = _signature(path)
                try:
                    await self._on_settled(path)
                except Exception:
                    log.exception("ganymede: taking in the change to %s failed", path)


def _age(path: Path, wall_clock: float) -> float | None:
    """Seconds since the file was last written, by the wall clock (None: it is gone)."""
    try:
        return wall_clock - path.stat().st_mtime
    except OSError:
        return None


def _signature(path: Path) -> Signature:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns
