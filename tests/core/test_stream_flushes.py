"""When a kernel's stream flush timers are due, from canned iopub messages as ipykernel sends
them (the real kernels are in tests/cli/test_execute.py and tests/serve/execution)."""

from __future__ import annotations

import math
from typing import Any

from ganymede.core.stream_flushes import STREAM_FLUSH_INTERVAL, StreamFlushes, quiet_start


def message(session: str, msg_type: str, **content: Any) -> dict[str, Any]:
    return {"header": {"session": session, "msg_type": msg_type}, "msg_type": msg_type,
            "parent_header": {}, "content": content}  # fmt: skip


def test_a_start_up_heard_whole_is_waited_out_only_after_a_stream() -> None:
    quiet = StreamFlushes()
    quiet.hear(message("k1", "iopub_welcome"), 1.0)
    assert quiet.due("k1") is None  # its start-up has not ended yet
    quiet.hear(message("k1", "status", execution_state="starting"), 1.1)
    assert quiet.due("k1") == -math.inf

    noisy = StreamFlushes()
    noisy.hear(message("k1", "stream", name="stderr", text="warning\n"), 1.0)
    noisy.hear(message("k1", "status", execution_state="starting"), 1.1)
    assert noisy.due("k1") == 1.0 + STREAM_FLUSH_INTERVAL


def test_a_start_up_not_heard_is_waited_out_from_the_first_status() -> None:
    late = StreamFlushes()
    late.hear(message("k1", "status", execution_state="busy"), 2.0)
    assert late.due("k1") == 2.0 + STREAM_FLUSH_INTERVAL
    # ipykernel may answer a request queued while it started just before its own status.
    late.hear(message("k1", "status", execution_state="starting"), 2.01)
    assert late.due("k1") == -math.inf


def test_streams_after_the_start_up_count_and_a_restart_starts_over() -> None:
    flushes = StreamFlushes()
    flushes.hear(message("k1", "status", execution_state="starting"), 1.0)
    flushes.hear(message("k1", "stream", name="stdout", text="cell\n"), 5.0)
    assert flushes.due("k1") == 5.0 + STREAM_FLUSH_INTERVAL
    assert flushes.due("k2") is None  # a process it has heard nothing of
    flushes.hear(message("k2", "status", execution_state="busy"), 9.0)
    assert flushes.due("k2") == 9.0 + STREAM_FLUSH_INTERVAL
    assert flushes.due("k1") is None


def test_an_environment_that_sets_it_keeps_its_own_setting() -> None:
    assert quiet_start({"HOME": "/h"}) == {"PYDEVD_DISABLE_FILE_VALIDATION": "1", "HOME": "/h"}
    assert quiet_start({"PYDEVD_DISABLE_FILE_VALIDATION": "0"}) == {
        "PYDEVD_DISABLE_FILE_VALIDATION": "0"
    }
