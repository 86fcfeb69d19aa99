"""Freed heap goes back to the system once released, as a closed room's memory must."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ganymede.serve.rooms.heap import release_freed_memory

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc, needs glibc")


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
