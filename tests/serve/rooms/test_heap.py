"""Freed heap goes back to the system once released, as a closed room's memory must."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ganymede.serve.rooms.heap import THRESHOLD_VARIABLE, release_freed_memory

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="reads /proc, needs glibc"),
    pytest.mark.slow,
]


def resident_mb() -> float:
    status = Path("/proc/self/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("VmRSS:")]
    return int(line.split()[1]) / 1024


def test_freed_heap_pages_go_back_to_the_system() -> None:
    # Blocks below glibc's mmap threshold live on the heap; the last one keeps its top in place,
    # so without a trim the pages of the freed ones stay resident.
    blocks = [bytes([n % 256]) * 100_000 for n in range(600)]
    pinned = blocks[-1]
    del blocks
    before = resident_mb()
    assert release_freed_memory()
    assert before - resident_mb() > 30, "the freed 60 MB stayed resident"
    assert pinned[0] == 599 % 256


# Run in a fresh interpreter: the threshold is the process's, and this one's has moved already.
PROBE = """
import ctypes, sys
from ganymede.serve.rooms.heap import keep_large_blocks_apart

class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = Mallinfo2
print(keep_large_blocks_apart())
libc.free(libc.malloc(8 << 20))  # a file-sized block freed: glibc's threshold rises past 1 MB
before = libc.mallinfo2().hblks
block = libc.malloc(1 << 20)
print(libc.mallinfo2().hblks - before)  # 1: the block has pages of its own
"""


def probe(env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def test_large_blocks_keep_pages_of_their_own_after_a_larger_one_was_freed() -> None:
    env = {key: value for key, value in os.environ.items() if key != THRESHOLD_VARIABLE}
    assert probe(env) == ["True", "1"]


def test_a_threshold_set_in_the_environment_wins() -> None:
    env = {**os.environ, THRESHOLD_VARIABLE: str(16 << 20)}
    assert probe(env) == ["False", "0"]
