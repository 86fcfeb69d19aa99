"""One writer per file across servers: a flock per room file, and the watch that keeps it.

Two servers on one machine may serve the same notebook. Both writing it would make each
undo the other's saves, so the first room to open a file takes an exclusive ``flock`` on
``<runtime dir>/ganymede-rooms/<sha256 of the file's real path>.lock``; a room that cannot is
read-only. The kernel drops a flock when its process exits, however it exits, so a crashed
owner never leaves a file locked for good. Lock files are never deleted: deleting one while
another process waits on it would let two processes hold "the" lock on two different inodes.

The holder writes its process id into the lock file, so a server whose room is read-only can
name the server that owns the file. A room whose file is renamed through the contents API moves
to the new path's lock, so the lock keeps naming the file wherever it lives.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import logging
import os
from pathlib import Path
from typing import Protocol

from ganymede.serve.rooms.protocol import SaveStatus
from ganymede.serve.service import detached_task

LOCK_DIR_NAME = "ganymede-rooms"
CHECK_INTERVAL = 1.0


def lock_path(real_path: Path, runtime_dir: Path) -> Path:
    """Where the lock of the file at ``real_path`` (symlinks resolved) lives."""
    digest = hashlib.sha256(str(real_path).encode("utf-8", "surrogateescape")).hexdigest()
    return runtime_dir / LOCK_DIR_NAME / f"{digest}.lock"


class RoomLock:
    """The exclusive, non-blocking flock of one file; the descriptor stays open while held."""

    def __init__(self, real_path: Path, runtime_dir: Path) -> None:
        self.path = lock_path(real_path, runtime_dir)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lock if no other process holds it; True if this object holds it now."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        return True

    def holder(self) -> int | None:
        """The process id the holder wrote; None if nobody wrote one (or it was just taken)."""
        try:
            text = self.path.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            return None
        return int(text) if text.isdigit() else None

    def still_held(self) -> bool:
        """Whether the lock is still this file's: False (and released) once the lock file at
        ``path`` is no longer the inode this object locked, since another process may lock the
        new one."""
        if self._fd is None:
            return False
        held = os.fstat(self._fd)
        try:
            current = os.stat(self.path)
        except FileNotFoundError:
            current = None
        if current is not None and (current.st_dev, current.st_ino) == (held.st_dev, held.st_ino):
            return True
        self.release()
        return False

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        os.close(fd)  # closing the only descriptor drops the flock


class LockedRoom(Protocol):
    """What the keeper needs of a document room."""

    name: str
    read_only: bool

    async def save(self, *, explicit: bool = False) -> SaveStatus: ...

    async def take_in_file_change(self) -> bool: ...


class LockKeeper:
    """Checks a room's lock every second and turns the room writable or read-only to match.

    A read-only room takes the lock as soon as the owner lets go (its room closed, its process
    exited), first taking in what the owner last wrote, then becoming writable. A writable room
    whose lock file was replaced (so another process may own the file now) saves its edits,
    then turns read-only and waits for the lock like any other.
    """

    def __init__(
        self,
        room: LockedRoom,
        lock: RoomLock,
        log: logging.Logger,
        interval: float = CHECK_INTERVAL,
    ) -> None:
        self.room = room
        self.lock = lock
        self.log = log
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    def move(self, real_path: Path, runtime_dir: Path) -> None:
        """The room's file now lives at ``real_path``: hold that path's lock instead.

        Taken before the old one is let go, so no other server finds the file unlocked in
        between. A writable room whose new path is locked already (another server's room has
        a file there) turns read-only; each check then tries for the new lock as usual.
        """
        moved = RoomLock(real_path, runtime_dir)
        if moved.path == self.lock.path:
            return
        if not self.room.read_only and not moved.try_acquire():
            self.log.warning(
                "room %s: another server has its new path open; read-only now", self.room.name
            )
            self.room.read_only = True
        self.lock.release()
        self.lock = moved

    async def start(self) -> None:
        if self._task is not None:
            raise RuntimeError("lock keeper already started")
        self._task = detached_task(self._run())

    async def stop(self) -> None:
        """Stop checking and let go of the lock (the room has saved by now)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.lock.release()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.check()
            except Exception:
                self.log.exception("room %s: checking its lock failed", self.room.name)

    async def check(self) -> None:
        """One look at the lock; the room changes side if the lock did."""
        if self.room.read_only:
            if self.lock.try_acquire():
                await self.room.take_in_file_change()
                self.room.read_only = False
                self.log.info("room %s: took over its file, writable now", self.room.name)
        elif not self.lock.still_held():
            self.log.warning(
                "room %s: another server owns its file now; saving, then read-only",
                self.room.name,
            )
            await self.room.save()
            self.room.read_only = True
