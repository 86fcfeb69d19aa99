"""The execute endpoint's source hash against references that are not the code under test."""

from __future__ import annotations

import random
import struct

import pytest

from ganymede.notebook.hashing import murmurhash2, source_hash

# The SPEC's vectors (jupyter-server-documents' frontend), then values computed with Austin
# Appleby's MurmurHash2 C code compiled apart from this project: 1-, 2-, 3-byte tails, whole
# blocks, and multi-byte UTF-8 (é is 2 bytes, € 3, 😀 4).
VECTORS = [
    ("", "0"),
    ("print('hello')", "3975440051"),
    ("1 + 1", "3531899427"),
    ("a", "2456313694"),
    ("ab", "446775395"),
    ("abc", "324500635"),
    ("abcd", "646393889"),
    ("abcde", "1594468574"),
    ("abcdef", "1271458169"),
    ("abcdefg", "4188131059"),
    ("\x00", "3914231485"),
    ("\xff", "3709160882"),
    ("é", "876201565"),
    ("€", "576417188"),
    ("😀", "3452565253"),
    ("naïve café", "1204964131"),
    ("日本語のテキスト", "3733144509"),
    ("x = '😀'\nprint(x)\n", "2891693623"),
]


@pytest.mark.parametrize(("source", "expected"), VECTORS)
def test_reference_vectors(source: str, expected: str) -> None:
    assert source_hash(source) == expected


def test_a_list_source_hashes_as_its_joined_text() -> None:
    assert source_hash(["print(", "'hello')"]) == "3975440051"
    assert source_hash([]) == "0"


def second_murmurhash2(data: bytes) -> int:
    """MurmurHash2, seed 0, written apart from the module: struct blocks, tail as one integer."""
    m = 0x5BD1E995
    h = len(data)
    blocks, tail_length = divmod(len(data), 4)
    for (k,) in struct.iter_unpack("<I", data[: blocks * 4]):
        k = (k * m) % 2**32
        k ^= k >> 24
        k = (k * m) % 2**32
        h = ((h * m) % 2**32) ^ k
    if tail_length:
        h ^= int.from_bytes(data[blocks * 4 :], "little")
        h = (h * m) % 2**32
    h ^= h >> 13
    h = (h * m) % 2**32
    return h ^ (h >> 15)


def test_agrees_with_a_second_implementation_on_random_inputs() -> None:
    generator = random.Random(20260101)
    alphabet = "ab\n\t é€😀日\x00"
    for length in range(200):
        text = "".join(generator.choice(alphabet) for _ in range(length))
        data = text.encode("utf-8")
        assert murmurhash2(data) == second_murmurhash2(data), repr(text)
    for length in range(64):
        data = generator.randbytes(length)
        assert murmurhash2(data) == second_murmurhash2(data), data.hex()


def test_the_second_implementation_meets_the_vectors() -> None:
    """Guards the guard: a wrong reference would make the comparison above meaningless."""
    for source, expected in VECTORS:
        assert str(second_murmurhash2(source.encode("utf-8"))) == expected


def test_seed_changes_the_hash() -> None:
    assert murmurhash2(b"", seed=1) != murmurhash2(b"")
    assert murmurhash2(b"abc", seed=0) == 324500635
