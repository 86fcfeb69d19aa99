"""Giving the memory of closed rooms back to the system.

A closed room's document, Rust's and Python's, is freed, but glibc's allocator keeps freed heap
pages mapped for later, so the server's resident size stays at its peak: after a hundred rooms
close it would hold what they held for good. ``malloc_trim`` hands the free pages back. Where
the C library has none (musl, macOS), nothing is released here and nothing breaks.
"""

from __future__ import annotations

import ctypes
import functools
import gc
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim  # type: ignore[no-any-return]


def release_freed_memory() -> bool:
    """Collect what only cycles keep alive (a room and its observers), then give free heap
    pages back; False where the C library cannot."""
    gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
