"""What the stress scripts share: real servers, room clients, notebook files and their checks.

Servers and clients are the test suite's own (``tests/serve``), so the scripts exercise exactly
what the tests do, only longer and in more orders.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
from jupyter_ydoc import YNotebook

from stress.oracle import Notebook, normalise
from tests.serve.conftest import RunningServer, jupyter_env, start_server
from tests.serve.rooms.client import RoomClient

METADATA = {
    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
    "language_info": {"name": "python"},
}
ROOM_ONLY_MARK = "trusted"
TEMPORARY_SUFFIX = ".tmp"  # what ganymede.core.files.atomic_write names its temporary files


def serve(home: Path, config: str) -> RunningServer:
    """A ``ganymede serve`` on loopback whose root holds ``ganymede.toml`` = ``config``."""
    root = home / "root"
    root.mkdir(parents=True, exist_ok=True)
    (root / "ganymede.toml").write_text(config)
    return start_server(root, jupyter_env(home / "jupyter"))


def notebook_json(cells: list[dict[str, Any]], metadata: dict[str, Any] | None = None) -> bytes:
    """A notebook file as a program other than the server would write it (nbformat 4.5)."""
    notebook = {
        "cells": cells,
        "metadata": METADATA if metadata is None else metadata,
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return (json.dumps(notebook, indent=1, ensure_ascii=False) + "\n").encode()


def code_cell(cell_id: str, source: str) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": cell_id,
        "metadata": {},
        "outputs": [],
        "source": source,
    }


def in_room(client: RoomClient) -> Notebook:
    """A client's document, normalised (duplicate ids kept, so a duplication shows), without the
    ``metadata.trusted`` marks the room shows clients and never saves."""
    notebook: YNotebook = client.shared  # type: ignore[assignment]
    content = normalise(notebook.get(deduplicate=False))
    for cell in content["cells"]:
        cell["metadata"].pop(ROOM_ONLY_MARK, None)
    return content


def valid_on_disk(data: bytes) -> Notebook | None:
    """The file's notebook if it is complete, valid nbformat JSON; None otherwise."""
    try:
        notebook = nbformat.reads(data.decode(), as_version=nbformat.NO_CONVERT)
        nbformat.validate(notebook)
    except (ValueError, nbformat.ValidationError, UnicodeDecodeError):
        return None
    return normalise(json.loads(data))


def leftover_temporaries(directory: Path) -> list[Path]:
    """Temporary files an interrupted atomic write left beside the notebooks."""
    return sorted(p for p in directory.iterdir() if p.name.endswith(TEMPORARY_SUFFIX))


def atomic_rewrite(path: Path, data: bytes) -> None:
    """How careful programs write: a whole new file renamed over the old one."""
    temporary = path.with_name(f".{path.name}.writer")
    temporary.write_bytes(data)
    os.replace(temporary, path)


async def torn_rewrite(path: Path, data: bytes, pieces: int, pause: float) -> None:
    """How careless programs write: truncate in place, then the bytes in ``pieces`` with pauses,
    so a watcher may see an empty or half-written notebook in between."""
    size = -(-len(data) // pieces)
    with path.open("wb") as handle:
        for start in range(0, len(data), size):
            handle.write(data[start : start + size])
            handle.flush()
            await asyncio.sleep(pause)


async def holds(condition: Callable[[], bool], timeout: float) -> bool:
    """Whether ``condition()`` comes to hold within ``timeout`` seconds (checked often)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True
