"""The send queue's bookkeeping, the write deadline and the frames' bytes, without a network."""

from __future__ import annotations

import asyncio
import logging

from ganymede.config import ServeConfig
from ganymede.serve.rooms.connection import Backlog, ConnectionLimits, Outbox, write_deadline
from ganymede.serve.rooms.handlers import binary_messages


def test_a_backlog_takes_frames_up_to_its_message_limit() -> None:
    backlog = Backlog(max_messages=3, max_bytes=1000)
    assert all(backlog.push(b"x") for _ in range(3))
    assert not backlog.push(b"x")
    assert (len(backlog), backlog.size) == (3, 3)
    backlog.written(1)
    assert backlog.push(b"y")


def test_a_backlog_takes_frames_up_to_its_byte_limit() -> None:
    backlog = Backlog(max_messages=100, max_bytes=10)
    assert backlog.push(b"12345")
    assert backlog.push(b"12345")
    assert not backlog.push(b"1")
    assert backlog.take() == [b"12345", b"12345"]
    backlog.written(1)
    assert backlog.size == 5
    assert not backlog.push(b"123456")
    assert backlog.push(b"12345")


def test_frames_taken_for_the_socket_count_until_written() -> None:
    backlog = Backlog(max_messages=3, max_bytes=100)
    backlog.push(b"a")
    backlog.push(b"b")
    assert backlog.take() == [b"a", b"b"]
    assert backlog.take() == []
    backlog.push(b"c")
    assert not backlog.push(b"d")
    assert backlog.take() == [b"c"]
    backlog.written(2)
    assert (len(backlog), backlog.size) == (1, 1)
    backlog.push(b"e")
    assert backlog.take() == [b"e"]
    backlog.written(2)
    assert (len(backlog), backlog.size, backlog.take()) == (0, 0, [])


def test_a_frame_larger_than_the_byte_limit_never_fits() -> None:
    backlog = Backlog(max_messages=100, max_bytes=10)
    assert not backlog.push(b"x" * 11)
    assert (len(backlog), backlog.size) == (0, 0)


def test_clearing_forgets_every_frame() -> None:
    backlog = Backlog(max_messages=2, max_bytes=10)
    backlog.push(b"ab")
    backlog.push(b"cd")
    backlog.clear()
    assert (len(backlog), backlog.size) == (0, 0)
    assert backlog.push(b"ef")


def test_a_write_may_take_30_s_plus_a_second_per_64_kib() -> None:
    assert write_deadline(0) == 30.0
    assert write_deadline(64 * 1024) == 31.0
    assert write_deadline(10 * 64 * 1024) == 40.0


def test_the_limits_come_from_the_serve_section() -> None:
    serve = ServeConfig(
        max_body_size=2048, client_queue_messages=7, ping_interval=0.5, ping_timeout=2.0
    )
    assert ConnectionLimits.of(serve) == ConnectionLimits(
        max_messages=7, max_bytes=2048, ping_interval=0.5, ping_timeout=2.0
    )


class HeldSocket:
    """A socket whose writes finish when the test says, so a stop can land between a write
    finishing and the writer resuming."""

    def __init__(self) -> None:
        self.writes: list[asyncio.Future[None]] = []
        self.batches: list[list[bytes]] = []

    def write_frames(self, frames: list[bytes]) -> asyncio.Future[None]:
        self.batches.append(frames)
        self.writes.append(asyncio.get_running_loop().create_future())
        return self.writes[-1]

    def ping(self) -> None:
        pass

    def close(self, code: int | None = None, reason: str | None = None) -> None:
        pass

    def abort(self, code: int, reason: str) -> None:
        pass


async def test_a_stop_while_a_write_is_in_flight_leaves_the_backlog_alone() -> None:
    """The write finishing after the stop must not count its frames off a cleared backlog."""
    loop = asyncio.get_running_loop()
    errors: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _, context: errors.append(context))
    limits = ConnectionLimits(max_messages=10, max_bytes=1000, ping_interval=0, ping_timeout=0)
    socket = HeldSocket()
    outbox = Outbox(socket, limits, name="r", log=logging.getLogger("test"))
    outbox.send(b"frame")
    while not socket.writes:
        await asyncio.sleep(0)
    outbox.stop()
    socket.writes[0].set_result(None)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert errors == []
    outbox.send(b"after the stop")
    await asyncio.sleep(0)
    assert len(socket.writes) == 1


async def test_frames_sent_during_a_write_go_out_together_once_it_is_flushed() -> None:
    limits = ConnectionLimits(max_messages=10, max_bytes=1000, ping_interval=0, ping_timeout=0)
    socket = HeldSocket()
    outbox = Outbox(socket, limits, name="r", log=logging.getLogger("test"))
    outbox.send(b"a")
    outbox.send(b"b")
    await asyncio.sleep(0)
    outbox.send(b"c")
    outbox.send(b"d")
    await asyncio.sleep(0)
    assert socket.batches == [[b"a", b"b"]]
    socket.writes[0].set_result(None)
    await asyncio.sleep(0)
    assert socket.batches == [[b"a", b"b"], [b"c", b"d"]]


def test_frames_written_together_keep_each_length_form_of_rfc_6455() -> None:
    frames = [b"a" * 125, b"b" * 126, b"c" * 0x10000, b"d"]
    first, large, last = binary_messages(frames)
    assert first[:2] == bytes([0x82, 125]) and first[2:127] == frames[0]
    second = first[127:]
    assert second[:4] == bytes([0x82, 126, 0, 126]) and second[4:130] == frames[1]
    assert second[130:] == bytes([0x82, 127]) + (0x10000).to_bytes(8, "big")
    assert large is frames[2]
    assert last == bytes([0x82, 1]) + b"d"
