"""Packed bytes come back equal, and take less room than the notebook JSON they hold."""

from __future__ import annotations

import json

from ganymede.serve.rooms.packed import Packed


def test_packed_bytes_come_back_equal_and_smaller() -> None:
    cells = [{"cell_type": "code", "source": f"x_{n} = {n}\n", "outputs": []} for n in range(500)]
    data = json.dumps({"cells": cells}, indent=1).encode()
    packed = Packed(data)
    assert packed.unpack() == data
    assert packed.size == len(data)
    assert packed.packed_size < len(data) / 5


def test_empty_bytes_pack() -> None:
    assert Packed(b"").unpack() == b""
