"""Kernel messages over the hand-written websocket of ``tests.serve.raw``, which reads nothing
until told to: it shows whether the server bounds what waits for such a client."""

from __future__ import annotations

import json
import uuid

from tests.serve.conftest import RunningServer
from tests.serve.raw import CLOSE, RawSocket, raw_socket
from tests.serve.rooms.client import eventually

# A shared limit for the servers these tests start ([serve] in their ganymede.toml).
MAX_BODY = 256 * 1024
QUEUE_MESSAGES = 50
BOUNDED_CONFIG = f"[serve]\nmax_body_size = {MAX_BODY}\nclient_queue_messages = {QUEUE_MESSAGES}\n"
LINES = 1000
PRINT_LOTS = f"for i in range({LINES}):\n    print(str(i).rjust(20000, 'x'), flush=True)\n"
DEADLINE = 60.0


async def send(client: RawSocket, message: dict[str, object]) -> None:
    await client.send_text(json.dumps(message))


async def receive(client: RawSocket) -> dict[str, object] | None:
    """The next kernel message, None when the server closed."""
    frame = await client.read_frame(DEADLINE)
    if frame is None or frame[0] == CLOSE:
        return None
    return json.loads(frame[1])


def request(msg_type: str, content: dict[str, object]) -> dict[str, object]:
    msg_id = uuid.uuid4().hex
    header = {"msg_id": msg_id, "msg_type": msg_type, "session": "s", "username": "test"}
    header |= {"version": "5.3", "date": ""}
    return {"header": header, "parent_header": {}, "metadata": {}, "content": content} | {
        "channel": "shell"
    }


async def reply_to(client: RawSocket, sent: dict[str, object]) -> tuple[dict, int]:
    """Read until the shell reply to ``sent``; it, and how many printed lines came first.

    Lines, not stream messages: a kernel under load flushes part of a line, or several, in one
    message, so only the text says how much of the output reached the client."""
    msg_id = sent["header"]["msg_id"]  # type: ignore[index]
    lines = 0
    while True:
        message = await receive(client)
        assert message is not None, "the server closed the kernel websocket"
        if message["msg_type"] == "stream":
            lines += message["content"]["text"].count("\n")  # type: ignore[index]
        parent = message["parent_header"]
        if message["channel"] == "shell" and parent.get("msg_id") == msg_id:  # type: ignore[union-attr]
            return message, lines


async def output_is_dropped_and_the_connection_stays(server: RunningServer, kernel_id: str) -> None:
    """A client that stops reading while its kernel prints megabytes: the server says it drops
    output, and once the client reads again the replies are there, the connection open."""
    async with raw_socket(server, f"api/kernels/{kernel_id}/channels") as client:
        execute = request("execute_request", {"code": PRINT_LOTS, "silent": False})
        await send(client, execute)
        dropping = f"kernel {kernel_id}: a client is "
        await eventually(lambda: dropping in server.log.read_text(), "output dropped", DEADLINE)

        reply, lines = await reply_to(client, execute)
        assert reply["content"]["status"] == "ok"
        assert 0 < lines < LINES, f"{lines} of the {LINES} printed lines reached the client"
        info = request("kernel_info_request", {})
        await send(client, info)
        reply, _ = await reply_to(client, info)
        assert reply["content"]["status"] == "ok"
