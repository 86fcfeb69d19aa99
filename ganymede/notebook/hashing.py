"""The execute endpoint's source hash: 32-bit MurmurHash2 (Austin Appleby), seed 0.

jupyter-server-documents' frontend hashes a cell's source this way and sends it as a decimal
string, so a run can be refused when the cell changed since the client read it. ``mmh3`` is
MurmurHash3 and yields different numbers, hence this small implementation.
"""

from __future__ import annotations

_M = 0x5BD1E995
_R = 24
_MASK = 0xFFFFFFFF


def murmurhash2(data: bytes, seed: int = 0) -> int:
    """The 32-bit MurmurHash2 of ``data`` (little-endian blocks, as the reference code on x86)."""
    length = len(data)
    h = (seed ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> _R
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = data[whole:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


def source_hash(source: str | list[str]) -> str:
    """A cell source's hash as the execute endpoint and the host API exchange it."""
    text = "".join(source) if isinstance(source, list) else source
    return str(murmurhash2(text.encode("utf-8")))
