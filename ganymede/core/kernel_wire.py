"""The kernel protocol over a Jupyter kernel websocket, as a gateway speaks it.

A gateway's kernel has no zmq ports here: ``/api/kernels/{id}/channels`` carries its messages as
JSON text frames, each naming its ``channel``, and (when a message has buffers) binary frames in
jupyter_server's legacy layout. The server's line to a gateway's kernel and ``ganymede execute``'s
gateway kernels both speak it through these helpers. ``execute_request`` is the one request
every line of Ganymede's runs a cell with, whatever carries it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session


def execute_request(code: str, *, stop_on_error: bool) -> dict[str, Any]:
    """The content of an ``execute_request`` for ``code``, as a notebook front end sends it.

    ``allow_stdin`` is off: no one answers ``input()``, which raises StdinNotImplementedError
    in the kernel instead of waiting forever.
    """
    return {
        "code": code,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": False,
        "stop_on_error": stop_on_error,
    }


def channels_url(ws_base: str, kernels_endpoint: str, kernel_id: str, session_id: str) -> str:
    """The kernel's websocket; ``session_id`` makes the gateway route its shell replies to us."""
    path = "/".join(
        part.strip("/") for part in (ws_base, kernels_endpoint, quote(kernel_id, safe=""))
    )
    return f"{path}/channels?session_id={quote(session_id, safe='')}"


def websocket_base(http_url: str) -> str:
    """``ws://`` for ``http://`` and ``wss://`` for ``https://``, as jupyter_server derives it."""
    if http_url.startswith("https://"):
        return "wss://" + http_url.removeprefix("https://")
    return "ws://" + http_url.removeprefix("http://")


def encode_message(
    session: Session, channel: str, msg_type: str, content: Mapping[str, Any]
) -> tuple[str, str]:
    """A request as one text frame; its msg_id, to match the replies, and the frame."""
    message = session.msg(msg_type, dict(content))
    message["channel"] = channel
    return str(message["header"]["msg_id"]), json.dumps(message, default=json_default)


def decode_frame(frame: str | bytes) -> dict[str, Any]:
    """One message from a frame; ValueError if it is not one."""
    if isinstance(frame, bytes):
        # jupyter_server's decoder is imported only for a message with buffers: it brings
        # much of the server with it, which ``ganymede execute`` does not otherwise load.
        from jupyter_server.services.kernels.connection.base import deserialize_binary_message

        message = deserialize_binary_message(frame)
    else:
        message = json.loads(frame)
    if not isinstance(message, dict):
        raise ValueError("a kernel message is a JSON object")
    return message
