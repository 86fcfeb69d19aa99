"""A client edit that makes the notebook's format fields unreadable is refused and undone: its
sender is closed 1007, the other clients see the fields back as they were, and the room saves."""

from __future__ import annotations

import httpx
import pytest
from jupyter_ydoc import YNotebook
from pycrdt import Map

from ganymede.serve.rooms import protocol
from ganymede.serve.rooms.format_guard import format_problem
from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import eventually, room_client
from tests.serve.rooms.conftest import (
    edit_first_cell,
    notebook_bytes,
    open_session,
    sources,
    sources_on_disk,
    write,
)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"nbformat": 4, "nbformat_minor": 5}, None),
        ({"nbformat": 4.0, "nbformat_minor": 5.0}, None),
        ({"nbformat": 4, "nbformat_minor": "5"}, "nbformat_minor to '5'"),
        ({"nbformat": None, "nbformat_minor": 5}, "nbformat to None"),
        ({"nbformat": 4, "nbformat_minor": 4.5}, "nbformat_minor to 4.5"),
        ({"nbformat": True, "nbformat_minor": 5}, "nbformat to True"),
        ({"nbformat": 4, "nbformat_minor": -1}, "nbformat_minor to -1"),
    ],
)
def test_format_fields_must_be_whole_numbers(
    fields: dict[str, object], problem: str | None
) -> None:
    found = format_problem(fields)
    assert (found is None) if problem is None else (found is not None and problem in found)


async def test_an_unreadable_nbformat_is_undone_and_only_its_sender_closed(
    server: RunningServer, api: httpx.Client
) -> None:
    path = write(server.root / "rooms" / "format.ipynb", notebook_bytes("x"))
    name, session = open_session(api, "rooms/format.ipynb")
    async with room_client(server, name, session) as ada, room_client(server, name, session) as bob:
        meta = ada.shared.ydoc.get("meta", type=Map)
        meta["nbformat_minor"] = "print(1)"
        # ada's provider reads its socket: the close shows on the connection once it came.
        await eventually(lambda: ada.connection.close_code is not None, "ada to be closed")
        assert ada.connection.close_code == protocol.CloseCode.INVALID_PAYLOAD
        assert "nbformat_minor" in (ada.connection.close_reason or "")

        seen: YNotebook = bob.shared  # type: ignore[assignment]
        bob_meta = seen.ydoc.get("meta", type=Map)
        await eventually(lambda: bob_meta.get("nbformat_minor") == 5, "the field to come back")
        edit_first_cell(bob, " = 1")
        await eventually(lambda: sources_on_disk(path) == ["x = 1"], "the room to save")
        assert sources(bob) == ["x = 1"]
