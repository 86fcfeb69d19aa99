"""The host-traffic predicate on messages as ipykernel 7 publishes them around host calls."""

from __future__ import annotations

from typing import Any

import pytest

from ganymede.host.api import TARGET
from ganymede.host.iopub_filter import (
    CONTENT_NEEDED,
    HostTraffic,
    RecentIds,
    is_host_traffic,
    without_host_comms,
)

HOST_COMM = "c0ffee"
SERVER_SENT = "server-kernel-info-1"
CELL = "browser-execute-7"


@pytest.fixture
def traffic() -> HostTraffic:
    known = HostTraffic(comm_ids={HOST_COMM})
    known.sent.add(SERVER_SENT)
    return known


CASES: list[tuple[str, str, str | None, dict[str, Any], bool]] = [
    # name, msg_type, parent msg_id, content, hidden
    ("status of a server request", "status", SERVER_SENT, {"execution_state": "idle"}, True),
    ("status of a cell", "status", CELL, {"execution_state": "busy"}, False),
    ("status with no parent", "status", None, {"execution_state": "starting"}, False),
    ("no-such-target stream", "stream", SERVER_SENT, {"name": "stderr", "text": "No such"}, True),
    ("a cell's output", "stream", CELL, {"name": "stdout", "text": "hi\n"}, False),
    ("a call from a cell", "comm_msg", CELL, {"comm_id": HOST_COMM, "data": {"id": "1"}}, True),
    ("the kernel closes the host comm", "comm_close", CELL, {"comm_id": HOST_COMM}, True),
    ("a widget message", "comm_msg", CELL, {"comm_id": "widget", "data": {}}, False),
    (
        "a widget opens",
        "comm_open",
        CELL,
        {"comm_id": "w2", "target_name": "jupyter.widget"},
        False,
    ),
    (
        "a kernel opens to the target",
        "comm_open",
        CELL,
        {"comm_id": "n", "target_name": TARGET},
        True,
    ),
    ("a widget closes", "comm_close", CELL, {"comm_id": "widget"}, False),
    ("a cell's display", "display_data", CELL, {"data": {"text/plain": "1"}}, False),
]


@pytest.mark.parametrize(
    ("msg_type", "parent", "content", "hidden"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_verdicts(
    traffic: HostTraffic, msg_type: str, parent: str | None, content: dict[str, Any], hidden: bool
) -> None:
    given = content if msg_type in CONTENT_NEEDED else {}
    assert is_host_traffic(msg_type, parent, given, traffic) is hidden


def test_comm_info_reply_loses_the_host_comm_only(traffic: HostTraffic) -> None:
    reply = {
        "status": "ok",
        "comms": {
            HOST_COMM: {"target_name": TARGET},
            "taken-one": {"target_name": TARGET},
            "widget": {"target_name": "jupyter.widget"},
        },
    }
    assert without_host_comms(reply, traffic) == {
        "status": "ok",
        "comms": {"widget": {"target_name": "jupyter.widget"}},
    }
    assert HOST_COMM in reply["comms"], "the input is left as it was"


def test_comm_info_error_reply_passes_unchanged(traffic: HostTraffic) -> None:
    reply = {"status": "error", "ename": "X", "evalue": "", "traceback": []}
    assert without_host_comms(reply, traffic) == reply


def test_recent_ids_forget_the_oldest() -> None:
    ids = RecentIds(limit=2)
    for msg_id in ("a", "b", "c"):
        ids.add(msg_id)
    assert "a" not in ids
    assert "b" in ids
    assert "c" in ids
