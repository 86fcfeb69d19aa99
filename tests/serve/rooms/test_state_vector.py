"""A SyncStep1 whose state vector does not decode closes only its sender, 1007 with a reason,
once the client is past its first SyncStep1 (the first is checked on the way in)."""

from __future__ import annotations

import httpx
import pytest
from pycrdt import Doc

from ganymede.serve.rooms import protocol
from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import eventually, open_socket, room_client
from tests.serve.rooms.conftest import edit_first_cell, notebook_bytes, open_session, sources, write
from tests.serve.websocket import closed_with

pytestmark = pytest.mark.slow

# One client, then its id, then no clock: the frame is whole, the state vector inside is not.
TRUNCATED_STATE = b"\x01\x02"


async def test_an_undecodable_state_vector_closes_only_its_sender(
    server: RunningServer, api: httpx.Client
) -> None:
    write(server.root / "rooms" / "state.ipynb", notebook_bytes("s"))
    name, session = open_session(api, "rooms/state.ipynb")
    async with room_client(server, name, session) as ada, room_client(server, name, session) as bob:
        sender = await open_socket(server, name, session)
        await sender.write_message(protocol.sync_step1(Doc().get_state()), binary=True)
        await sender.write_message(protocol.sync_step1(TRUNCATED_STATE), binary=True)
        code, reason = await closed_with(sender)
        assert code == protocol.CloseCode.INVALID_PAYLOAD
        assert reason is not None and "state vector" in reason

        edit_first_cell(ada, " fine")
        await eventually(lambda: sources(bob) == ["s fine"], "the others to carry on")
