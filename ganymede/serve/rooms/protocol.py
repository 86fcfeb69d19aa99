"""The collaboration wire format, decoded strictly and encoded as the docprovider expects.

Frames are what y-websocket 1.x clients and JupyterLab's docprovider exchange: a varuint message
type, then y-protocols sync (0) or awareness (1) payloads, or jupyter-collaboration's RAW (2)
save request. Decoding checks every length against the bytes actually present, so a truncated
or foreign frame is refused here, before it can reach the document or another client. Pure:
bytes in, values out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

from pycrdt import write_message, write_var_uint

from ganymede.errors import FrameError, UnsupportedFrame

TRANSIENT_ROOM_SEPARATORS = 2
SAVE_REQUEST = "save"
# A close frame holds at most 125 bytes, two of them the code.
MAX_CLOSE_REASON = 123
# Eight 7-bit groups hold any safe JS integer (2**53), the largest length, clock or id a client
# can send; a longer number is garbage.
_MAX_VAR_UINT_BYTES = 8

SaveStatus = Literal["success", "skipped", "failed"]


class MessageType(IntEnum):
    SYNC = 0
    AWARENESS = 1
    RAW = 2
    QUERY_AWARENESS = 3


class CloseCode(IntEnum):
    """Websocket close codes, as the docprovider frontend reads them."""

    GOING_AWAY = 1001  # the room closed: the client reconnects
    UNSUPPORTED_DATA = 1003  # with a JSON reason: a dialog, the document is dropped
    INVALID_PAYLOAD = 1007
    BAD_REQUEST = 4400  # before the first sync: the document does not open
    FILE_NOT_FOUND = 4404


class SyncType(IntEnum):
    STEP1 = 0
    STEP2 = 1
    UPDATE = 2


@dataclass(frozen=True)
class SyncStep1:
    """A client's state vector: it wants what it is missing (answered with SyncStep2)."""

    state: bytes


@dataclass(frozen=True)
class SyncStep2:
    """The answer to our SyncStep1: the client's changes the room has not seen."""

    update: bytes


@dataclass(frozen=True)
class SyncUpdate:
    update: bytes


@dataclass(frozen=True)
class AwarenessEntry:
    """One client's presence: ``state`` is its JSON text, ``"null"`` once it has left."""

    client_id: int
    clock: int
    state: str

    @property
    def gone(self) -> bool:
        return self.state == "null"


@dataclass(frozen=True)
class AwarenessUpdate:
    """Relayed verbatim (``payload``); ``entries`` tell the room whose presence it carries."""

    payload: bytes
    entries: tuple[AwarenessEntry, ...]


@dataclass(frozen=True)
class AwarenessQuery:
    """A client asking for everyone's presence (y-websocket's messageQueryAwareness)."""


@dataclass(frozen=True)
class SaveRequest:
    """Ctrl-S in JupyterLab: the reply must name ``save_id`` or the frontend waits forever."""

    save_id: int


Message = SyncStep1 | SyncStep2 | SyncUpdate | AwarenessUpdate | AwarenessQuery | SaveRequest


@dataclass(frozen=True)
class RoomName:
    """``format:type:fileId`` for a document room; anything else names a transient room."""

    text: str
    format: str | None = None
    type: str | None = None
    file_id: str | None = None

    @classmethod
    def parse(cls, text: str) -> RoomName:
        """Split on ``:`` at most twice, as jupyter-collaboration does; fewer colons = transient."""
        parts = text.split(":", TRANSIENT_ROOM_SEPARATORS)
        if len(parts) <= TRANSIENT_ROOM_SEPARATORS:
            return cls(text)
        format_, type_, file_id = parts
        return cls(text, format_, type_, file_id)

    @property
    def is_document(self) -> bool:
        return self.file_id is not None


class _Reader:
    """Reads y-protocols primitives, refusing anything that runs past the end of the frame."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._position = 0

    def var_uint(self) -> int:
        value = 0
        for shift in range(0, 7 * _MAX_VAR_UINT_BYTES, 7):
            if self._position >= len(self._data):
                raise FrameError("frame ends inside a number")
            byte = self._data[self._position]
            self._position += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
        raise FrameError("number too large")

    def var_bytes(self) -> bytes:
        length = self.var_uint()
        end = self._position + length
        if end > len(self._data):
            raise FrameError(f"payload of {length} bytes runs past the end of the frame")
        chunk = self._data[self._position : end]
        self._position = end
        return chunk

    def var_string(self) -> str:
        try:
            return self.var_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise FrameError("string is not UTF-8") from None

    def end(self) -> None:
        if self._position != len(self._data):
            raise FrameError(f"{len(self._data) - self._position} stray bytes after the message")


def decode_frame(frame: bytes) -> Message:
    """The message in one binary websocket frame; FrameError if it breaks the protocol."""
    reader = _Reader(frame)
    kind = reader.var_uint()
    message: Message
    if kind == MessageType.SYNC:
        message = _decode_sync(reader)
    elif kind == MessageType.AWARENESS:
        payload = reader.var_bytes()
        message = AwarenessUpdate(payload, decode_awareness(payload))
    elif kind == MessageType.RAW:
        request = reader.var_string()
        if request != SAVE_REQUEST:
            raise UnsupportedFrame(f"unknown RAW request {request[:40]!r}")
        message = SaveRequest(reader.var_uint())
    elif kind == MessageType.QUERY_AWARENESS:
        message = AwarenessQuery()
    else:
        raise UnsupportedFrame(f"unknown message type {kind}")
    reader.end()
    return message


def _decode_sync(reader: _Reader) -> SyncStep1 | SyncStep2 | SyncUpdate:
    step = reader.var_uint()
    payload = reader.var_bytes()
    if step == SyncType.STEP1:
        return SyncStep1(payload)
    if step == SyncType.STEP2:
        return SyncStep2(payload)
    if step == SyncType.UPDATE:
        return SyncUpdate(payload)
    raise UnsupportedFrame(f"unknown sync step {step}")


def decode_awareness(payload: bytes) -> tuple[AwarenessEntry, ...]:
    """The entries of an awareness update; each state must be JSON, since every peer parses it."""
    reader = _Reader(payload)
    entries = []
    for _ in range(reader.var_uint()):
        client_id = reader.var_uint()
        clock = reader.var_uint()
        state = reader.var_string()
        try:
            json.loads(state)
        except json.JSONDecodeError:
            raise FrameError(f"awareness state of client {client_id} is not JSON") from None
        entries.append(AwarenessEntry(client_id, clock, state))
    reader.end()
    return tuple(entries)


def decode_state_vector(state: bytes) -> dict[int, int]:
    """A Yjs state vector: for each client id, how many of its changes the sender has."""
    reader = _Reader(state)
    clocks = {}
    for _ in range(reader.var_uint()):
        client_id = reader.var_uint()
        clocks[client_id] = reader.var_uint()
    reader.end()
    return clocks


def encode_awareness(entries: list[AwarenessEntry]) -> bytes:
    """An awareness update payload (not yet framed) carrying ``entries``."""
    parts = [write_var_uint(len(entries))]
    for entry in entries:
        state = entry.state.encode("utf-8")
        parts += [write_var_uint(entry.client_id), write_var_uint(entry.clock)]
        parts += [write_var_uint(len(state)), state]
    return b"".join(parts)


def sync_step1(state: bytes) -> bytes:
    return bytes([MessageType.SYNC, SyncType.STEP1]) + write_message(state)


def sync_step2(update: bytes) -> bytes:
    return bytes([MessageType.SYNC, SyncType.STEP2]) + write_message(update)


def sync_update(update: bytes) -> bytes:
    return bytes([MessageType.SYNC, SyncType.UPDATE]) + write_message(update)


def awareness_frame(payload: bytes) -> bytes:
    return bytes([MessageType.AWARENESS]) + write_message(payload)


def unknown_session_reason(session_id: str | None) -> str:
    """The JSON close reason that makes JupyterLab offer a reload instead of merging history
    the room never had (close code 1003). The session id is left out if it would not fit."""
    reason = {"reason": "unknown_session", "sessionId": session_id, "reloadable": True}
    text = json.dumps(reason, separators=(",", ":"))
    if len(text.encode("utf-8")) > MAX_CLOSE_REASON:
        text = json.dumps({"reason": "unknown_session", "reloadable": True}, separators=(",", ":"))
    return text


def save_request(save_id: int) -> bytes:
    """What JupyterLab sends on Ctrl-S (clients in tests send it too)."""
    return bytes([MessageType.RAW]) + write_message(SAVE_REQUEST.encode()) + write_var_uint(save_id)


def save_reply(save_id: int, status: SaveStatus) -> bytes:
    """``[2][varString json]``: ASCII JSON, since the client reads the length as a char count."""
    text = json.dumps({"type": "save", "responseTo": save_id, "status": status})
    return bytes([MessageType.RAW]) + write_message(text.encode("ascii"))


def decode_raw_json(frame: bytes) -> dict[str, object]:
    """The JSON object of a RAW frame the server sent (for clients; the server never reads one)."""
    reader = _Reader(frame)
    if reader.var_uint() != MessageType.RAW:
        raise FrameError("not a RAW frame")
    text = reader.var_string()
    reader.end()
    try:
        answer = json.loads(text)
    except json.JSONDecodeError:
        raise FrameError("RAW frame is not JSON") from None
    if not isinstance(answer, dict):
        raise FrameError("RAW frame is not a JSON object")
    return answer
