"""Helpers for the execute endpoint: real kernels started through the API, notebooks with
known cell ids, and the endpoint called without blocking the test's own room client."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest

from ganymede.notebook.hashing import source_hash
from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import RoomClient
from tests.serve.rooms.conftest import open_session, write

STARTUP = 60.0
"""How long a fresh kernel on a busy machine may take to run its first cell."""


def notebook_with(**sources: str) -> bytes:
    """A notebook whose code cells have the given ids and sources, in order."""
    cells = []
    for cell_id, source in sources.items():
        cell = nbformat.v4.new_code_cell(source)
        cell["id"] = cell_id
        cells.append(cell)
    return (nbformat.writes(nbformat.v4.new_notebook(cells=cells)) + "\n").encode()


def add_notebook(server: RunningServer, api: httpx.Client, path: str, **sources: str) -> str:
    """Write the notebook under the root; its room name (the execute endpoint's document id)."""
    write(server.root / path, notebook_with(**sources))
    name, _ = open_session(api, path)
    return name


def hashed(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    """The ``cells`` of a request: each cell id with the hash of the source it is said to have."""
    return [{"cell_id": cell_id, "source_hash": source_hash(source)} for cell_id, source in pairs]


def room_cells(client: RoomClient) -> list[dict[str, Any]]:
    return [ycell.to_py() for ycell in client.shared.ycells]  # type: ignore[attr-defined]


async def execute(
    endpoint: httpx.AsyncClient, kernel: str, document: str, cells: Any, **extra: Any
) -> httpx.Response:
    """The hashed form, with a fresh request id."""
    body = {"document_id": document, "cells": cells, "request_id": uuid.uuid4().hex, **extra}
    return await endpoint.post(f"api/kernels/{kernel}/execute", json=body)


def on_disk(path: Path) -> list[dict[str, Any]]:
    return list(nbformat.reads(path.read_text(), as_version=4).cells)


@pytest.fixture
def kernel(server: RunningServer, api: httpx.Client) -> Iterator[str]:
    """A python3 kernel started through the kernels API, shut down after the test."""
    answer = api.post("api/kernels", json={"name": "python3"})
    assert answer.status_code == 201, answer.text
    kernel_id = str(answer.json()["id"])
    yield kernel_id
    api.delete(f"api/kernels/{kernel_id}")


@pytest.fixture
async def endpoint(server: RunningServer) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": f"token {server.token}"}
    async with httpx.AsyncClient(base_url=server.base, headers=headers, timeout=60) as client:
        yield client
