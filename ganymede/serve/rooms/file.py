"""The file behind a room: found by its id, read with its hash, written only if unchanged.

A room names its file by id so that a rename through the contents API moves the room along.
Writes carry an If-Match on the hash the room last read or wrote: the file is the source of
truth, and a room must never overwrite a change it has not seen. Nor a file its mode makes
read-only: an atomic replace would swap it anyway (a rename asks only the directory), so the
mode is checked first, as the contents API does for ``writable``. Blocking I/O; the room runs
these methods in a worker thread.
"""

from __future__ import annotations

import errno
import hashlib
import os
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ganymede.core.files import atomic_write, remove_abandoned_temporaries
from ganymede.errors import NotebookNotFound
from ganymede.fileid import FileIdStore, os_path_of


def content_hash(data: bytes, algorithm: str) -> str:
    """The hash the contents API reports for these bytes (``?hash=1``), in its algorithm."""
    return hashlib.new(algorithm, data).hexdigest()


@dataclass(frozen=True)
class Snapshot:
    """What the file held when read: its API path then, its bytes and their hash."""

    path: str
    data: bytes
    hash: str


class WriteOutcome(Enum):
    WRITTEN = "written"
    ALREADY_THERE = "already there"  # the file already held exactly these bytes
    CHANGED_ON_DISK = "changed on disk"  # someone else wrote it since the room last looked
    GONE = "gone"


class RoomFile:
    """The file with id ``file_id`` under the store's root, wherever it has been renamed to."""

    def __init__(self, file_id: str, file_ids: FileIdStore, hash_algorithm: str) -> None:
        self.file_id = file_id
        self._file_ids = file_ids
        self._algorithm = hash_algorithm

    def hash_of(self, data: bytes) -> str:
        return content_hash(data, self._algorithm)

    def read(self) -> Snapshot:
        """The file as it is now; NotebookNotFound when the id names no file any more."""
        path, os_path = self._locate()
        try:
            data = os_path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise NotebookNotFound(path) from None
        return Snapshot(path, data, self.hash_of(data))

    def os_path(self) -> Path:
        """Where the file is on disk now; NotebookNotFound when the id names no file any more."""
        return self._locate()[1]

    def writable(self) -> bool:
        """Whether the server may write the file, by its mode (True once it is gone: the room
        then closes as for any file gone)."""
        try:
            return os.access(self._locate()[1], os.W_OK)
        except NotebookNotFound:
            return True

    def remove_abandoned_writes(self) -> list[Path]:
        """Remove what saves cut short by a killed server left beside the file (see core.files)."""
        try:
            return remove_abandoned_temporaries(self._locate()[1])
        except NotebookNotFound:
            return []

    def write_if_unchanged(self, data: bytes, expected_hash: str) -> tuple[WriteOutcome, str]:
        """Replace the file atomically with ``data`` if it still hashes to ``expected_hash``
        (checked again just before the rename, after the slow write and sync).

        Returns the outcome and the hash the file has afterwards. OSError (a full disk, no
        permission) leaves the file as it was and propagates.
        """
        try:
            current = self.read()
        except NotebookNotFound:
            return WriteOutcome.GONE, expected_hash
        if current.data == data:
            return WriteOutcome.ALREADY_THERE, current.hash
        if current.hash != expected_hash:
            return WriteOutcome.CHANGED_ON_DISK, current.hash
        os_path = self._locate()[1]
        if not os.access(os_path, os.W_OK):
            raise PermissionError(errno.EACCES, "the file is read-only", str(os_path))
        if not atomic_write(os_path, data, lambda: self._hash_on_disk(os_path) == expected_hash):
            return WriteOutcome.CHANGED_ON_DISK, self._hash_on_disk(os_path)
        return WriteOutcome.WRITTEN, self.hash_of(data)

    def _hash_on_disk(self, os_path: Path) -> str:
        """The file's hash now ("" when it is gone: no hash matches that)."""
        try:
            return self.hash_of(os_path.read_bytes())
        except FileNotFoundError:
            return ""

    def _locate(self) -> tuple[str, Path]:
        path = self._file_ids.get_path(self.file_id)
        if path is None:
            raise NotebookNotFound(self.file_id)
        return path, os_path_of(self._file_ids.root, path)
