"""Which execute replies end a run cleanly, as papermill reads them."""

from __future__ import annotations

from typing import Any

import pytest

from ganymede.execute.replies import clean_stop


def error(ename: str, evalue: str) -> dict[str, Any]:
    return {"status": "error", "ename": ename, "evalue": evalue, "traceback": []}


@pytest.mark.parametrize(
    ("reply", "stop"),
    [
        (error("SystemExit", "0"), "SystemExit(0)"),
        (error("SystemExit", ""), "SystemExit()"),
        ({"status": "ok", "payload": [{"source": "ask_exit", "keepkernel": False}]}, "exit()"),
        (error("SystemExit", "3"), None),
        (error("SystemExit", "bye"), None),
        (error("ValueError", "0"), None),
        ({"status": "ok", "payload": []}, None),
        ({"status": "ok"}, None),
    ],
)
def test_clean_stops(reply: dict[str, Any], stop: str | None) -> None:
    assert clean_stop(reply) == stop
