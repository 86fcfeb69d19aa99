"""Writing files so a crash leaves the old version or the new one, never a truncated mix.

A writer holds an exclusive flock on its temporary file until the rename, so a temporary file
nobody holds a lock on was abandoned by a writer that died mid-write, and may be removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import string
import tempfile
from collections.abc import Callable
from pathlib import Path

TEMPORARY_SUFFIX = ".tmp"
RANDOM_PART = 8  # tempfile.mkstemp's random characters
RANDOM_CHARACTERS = frozenset(string.ascii_lowercase + string.digits + "_")


def atomic_write(
    path: Path,
    data: bytes,
    still_current: Callable[[], bool] = lambda: True,
    *,
    durable: bool = True,
) -> bool:
    """Write ``data`` to ``path`` via a synced temporary file beside it, then rename.

    The file keeps its permission bits; a full disk or any other failure leaves ``path`` untouched
    and removes the temporary file. ``still_current`` is asked just before the rename, once the
    slow part (writing and syncing) is done, whether ``path`` is still what the caller last saw:
    if not, nothing is written and the result is False, so another program's write landing
    during the save is never overwritten unseen. ``durable=False`` skips the syncs: the rename
    still means a killed process leaves the old file or the new one, but a power cut may not;
    for saves a later durable write supersedes, where a sync per save would cost more than it
    keeps.
    """
    directory = path.parent
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, temporary = locked_temporary(path)
    try:
        with os.fdopen(fd, "wb") as handle:  # the lock holds until the rename: "still writing"
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), mode)
            if not still_current():
                os.unlink(temporary)
                return False
            os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    if not durable:
        return True
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return True


def locked_temporary(path: Path) -> tuple[int, str]:
    """A new temporary file beside ``path``, open and locked; made again if a cleanup took the
    first one away in the moment between its creation and its lock."""
    while True:
        fd, temporary = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=TEMPORARY_SUFFIX, dir=path.parent
        )
        fcntl.flock(fd, fcntl.LOCK_EX)
        with contextlib.suppress(FileNotFoundError):
            if os.stat(temporary).st_ino == os.fstat(fd).st_ino:
                return fd, temporary
        os.close(fd)


def remove_abandoned_temporaries(path: Path) -> list[Path]:
    """Remove the temporary files that writers of ``path`` killed mid-write left beside it.

    Without this, every crash during a save leaves a hidden copy of the notebook behind for
    good. A temporary file some live writer still holds is left alone. Returns what went.
    """
    removed = []
    for candidate in temporaries_of(path):
        try:
            fd = os.open(candidate, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue  # renamed or removed meanwhile, or not a plain file
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a writer is at work on it
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(candidate)
                removed.append(candidate)
        finally:
            os.close(fd)
    return removed


def temporaries_of(path: Path) -> list[Path]:
    """The files named as ``atomic_write`` names its temporary files for ``path``."""
    prefix = f".{path.name}."
    found = []
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for entry in os.scandir(path.parent):
            name = entry.name
            if name.startswith(prefix) and name.endswith(TEMPORARY_SUFFIX):
                middle = name[len(prefix) : -len(TEMPORARY_SUFFIX)]
                if len(middle) == RANDOM_PART and set(middle) <= RANDOM_CHARACTERS:
                    found.append(path.parent / name)
    return found
