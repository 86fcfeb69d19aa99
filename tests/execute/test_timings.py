"""nbclient's ``metadata.execution`` stamps and plain-text tracebacks: pure functions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from ganymede.execute.ansi import strip_ansi
from ganymede.execute.timings import KEYS, CellTimings, timestamp

WHEN = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def test_each_key_comes_from_its_message_and_header_date() -> None:
    timings = CellTimings()
    for channel, msg_type, content, seconds in [
        ("iopub", "status", {"execution_state": "busy"}, 0),
        ("iopub", "execute_input", {"code": "1"}, 1),
        ("iopub", "stream", {"name": "stdout", "text": "x"}, 2),
        ("shell", "execute_reply", {"status": "ok"}, 3),
        ("iopub", "status", {"execution_state": "idle"}, 4),
    ]:
        date = WHEN + timedelta(seconds=seconds)
        timings.observe(
            channel, {"msg_type": msg_type, "content": content, "header": {"date": date}}
        )
    assert tuple(timings.stamps) == KEYS
    assert timings.stamps["iopub.status.busy"] == "2026-01-02T03:04:05.678901Z"
    assert timings.stamps["iopub.status.idle"] == "2026-01-02T03:04:09.678901Z"


def test_stamps_are_utc_whatever_the_header_zone() -> None:
    eastern = WHEN.astimezone(timezone(timedelta(hours=-5)))
    assert timestamp(eastern) == "2026-01-02T03:04:05.678901Z"
    assert timestamp("2026-01-02T03:04:05Z") == "2026-01-02T03:04:05Z"
    assert timestamp(None).endswith("Z")


def test_tracebacks_lose_colours_and_links_and_keep_their_words() -> None:
    line = "\x1b[0;31mValueError\x1b[0m: \x1b[1;32mbad\x1b[39;49m"
    assert strip_ansi(line) == "ValueError: bad"
    link = "\x1b]8;;file:///tmp/x.py\x1b\\x.py\x1b]8;;\x1b\\:3"
    assert strip_ansi(link) == "x.py:3"
    assert strip_ansi("plain [0;31m") == "plain [0;31m"
