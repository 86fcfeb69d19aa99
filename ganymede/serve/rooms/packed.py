"""Bytes a room keeps for later but rarely reads: compressed while they wait.

A room keeps its merge base (the bytes it last read from or wrote to its file), what the file
holds as far as it knows, and the update its document loaded with, each as large as the file,
and reads them only when the file changes or a save compares with them. Notebook JSON packs
to about a tenth at zlib's fastest level, in milliseconds for a few megabytes.
"""

from __future__ import annotations

import zlib

FASTEST = 1


class Packed:
    """``data`` held compressed; ``unpack`` gives back an equal copy each time."""

    __slots__ = ("_packed", "size")

    def __init__(self, data: bytes) -> None:
        self._packed = zlib.compress(data, FASTEST)
        self.size = len(data)

    def unpack(self) -> bytes:
        return zlib.decompress(self._packed)

    @property
    def packed_size(self) -> int:
        return len(self._packed)
