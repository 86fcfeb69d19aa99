"""What a long-lived server keeps of the notebooks it has searched, so the next search only stats.

A server searches the same tree again and again; reading and parsing every file each time is
most of a search's cost. The cache keeps each file's ``SearchableNotebook`` with the file's
``FileStamp`` and hands it back only while a fresh stat gives the same stamp, so a changed file is
read again. It holds at most ``max_chars`` characters (``SearchableNotebook.size``: the text
twice, as written and lowered, and a fixed cost per notebook and cell), forgetting the least
recently used notebooks first; a deleted file's entry is never asked for again and ages out.

A stamp compares device, inode, size, and the modification and change times to the nanosecond:
an atomic save (a new inode), a write that changes the size, a later write (a later time) and
``os.utime`` putting an old time back (the change time moves) all give a new stamp. What a stamp
cannot see is a same-size rewrite in place within one tick of the filesystem's clock, so a file
is kept only once its times are ``settle_ns`` older than the stat: any later write then lands on a
later tick. What remains: a clock set backwards, writes through a shared mapping the kernel has
not stamped yet, and network filesystems whose server clock runs behind this machine's.

No I/O here: the caller stats and reads, and says when. One thread uses a cache at a time (the
server's event loop).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import NamedTuple

from ganymede.core.search import SearchableNotebook

DEFAULT_MAX_CHARS = 64 << 20
SETTLE_NS = 2_000_000_000
"""Two seconds: the coarsest common timestamp tick (FAT's) with room for the clocks' lag."""


class FileStamp(NamedTuple):
    """What differs between two versions of a file, short of a rewrite within one clock tick.

    A tuple, not a frozen dataclass: a search makes one per file, and this builds 5x faster.
    """

    device: int
    inode: int
    size: int
    modified_ns: int
    changed_ns: int

    @classmethod
    def of(cls, status: os.stat_result) -> FileStamp:
        return cls(
            status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns
        )

    def settled(self, now_ns: int, settle_ns: int) -> bool:
        """Whether every write after ``now_ns`` must give the file a different stamp."""
        return max(self.modified_ns, self.changed_ns) <= now_ns - settle_ns


class SearchCache:
    """Searchable notebooks by file, each valid for one stamp, bounded in characters (LRU)."""

    def __init__(self, max_chars: int = DEFAULT_MAX_CHARS, settle_ns: int = SETTLE_NS) -> None:
        self.max_chars = max_chars
        self.settle_ns = settle_ns
        self._kept: OrderedDict[str, tuple[FileStamp, SearchableNotebook]] = OrderedDict()
        self._chars = 0

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def chars(self) -> int:
        """The characters held now, never more than ``max_chars``."""
        return self._chars

    def get(self, key: str, stamp: FileStamp) -> SearchableNotebook | None:
        """The notebook kept for ``key`` if the file still has ``stamp``, else None."""
        kept = self._kept.get(key)
        if kept is None:
            return None
        if kept[0] != stamp:
            self._forget(key)
            return None
        self._kept.move_to_end(key)
        return kept[1]

    def would_keep(self, stamp: FileStamp, now_ns: int) -> bool:
        """Whether a file with ``stamp`` may be kept: one that may not is better read with a
        test of its raw bytes first, which spares parsing it when the query cannot be there.
        A file of more bytes than the cache holds characters is taken to be too large."""
        return stamp.size <= self.max_chars and stamp.settled(now_ns, self.settle_ns)

    def put(self, key: str, stamp: FileStamp, notebook: SearchableNotebook, now_ns: int) -> None:
        """Keep ``notebook``, read from ``key`` after a stat (made at ``now_ns`` or later) gave
        ``stamp``; a clock read before the stat makes the settled test err on the safe side.

        A file written too recently to be told apart from its next version, or larger than the
        whole cache, is not kept; older notebooks make room for the rest.
        """
        self._forget(key)
        if not stamp.settled(now_ns, self.settle_ns) or notebook.size > self.max_chars:
            return
        self._kept[key] = (stamp, notebook)
        self._chars += notebook.size
        while self._chars > self.max_chars:
            self._forget(next(iter(self._kept)))

    def _forget(self, key: str) -> None:
        kept = self._kept.pop(key, None)
        if kept is not None:
            self._chars -= kept[1].size
