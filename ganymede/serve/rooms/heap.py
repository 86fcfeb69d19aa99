"""Giving the memory of closed rooms back to the system.

A closed room's document, Rust's and Python's, is freed, but glibc's allocator keeps freed heap
pages mapped for later, so the server's resident size stays at its peak: after a hundred rooms
close it would hold what they held for good. ``malloc_trim`` hands the free pages back. Where
the C library has none (musl, macOS), nothing is released here and nothing breaks.

Blocks of a file's size (its bytes, a document's update, their packed and parsed forms) are the
other half. glibc gives a block of 128 KB or more pages of its own, handed back the moment it is
freed, but each time one is freed it raises that threshold to the block's size (up to 32 MB):
after the first room closes, every later file's bytes come from the heap, and leave it in pieces
that a trim cannot give back while a small block sits among them. The server keeps the threshold
where it starts.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
from collections.abc import Callable

# mallopt's parameter for the size from which blocks get pages of their own, and that size.
M_MMAP_THRESHOLD = -3
LARGE_BLOCK = 128 * 1024
THRESHOLD_VARIABLE = "MALLOC_MMAP_THRESHOLD_"


@functools.cache
def _c_function(name: str, *argtypes: type) -> Callable[..., int] | None:
    """The C library's function ``name`` returning an int, or None where it has none."""
    try:
        function = getattr(ctypes.CDLL(None), name)
    except (AttributeError, OSError):
        return None
    function.argtypes = list(argtypes)
    function.restype = ctypes.c_int
    return function  # type: ignore[no-any-return]


def release_freed_memory() -> bool:
    """Collect what only cycles keep alive (a room and its observers), then give free heap
    pages back; False where the C library cannot."""
    gc.collect()
    trim = _c_function("malloc_trim", ctypes.c_size_t)
    if trim is None:
        return False
    trim(0)
    return True


def keep_large_blocks_apart() -> bool:
    """Fix glibc's threshold for blocks with pages of their own at ``LARGE_BLOCK`` (see the
    module's docstring); False where the C library has no ``mallopt``, or when the environment
    sets the threshold itself (glibc reads ``MALLOC_MMAP_THRESHOLD_`` at start: that wins)."""
    if THRESHOLD_VARIABLE in os.environ:
        return False
    mallopt = _c_function("mallopt", ctypes.c_int, ctypes.c_int)
    return mallopt is not None and bool(mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK))
