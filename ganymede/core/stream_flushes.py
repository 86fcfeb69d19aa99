"""When the stream flush timers a kernel armed have all fired, read from its iopub.

ipykernel publishes what a cell writes to stdout or stderr from a timer: the first write to a
stream since its last flush arms a timer that flushes it ``STREAM_FLUSH_INTERVAL`` later. An
explicit flush (the one at the end of the kernel's start-up, or at the end of a request that
wrote) publishes the text but leaves that timer running. A cell that starts before the stale
timer fires has what it writes to that stream published when it fires, ahead of what it wrote
to the other stream first: ``print('out'); print('err', file=sys.stderr)`` comes out stderr
first. Every such timer was armed by a write whose text is published (as a ``stream``) at the
latest when it fires, so it is due at most ``STREAM_FLUSH_INTERVAL`` after that ``stream``
message. A request sent once they are due has its ``status`` published by the thread that runs
the timers after it ran them: the first cell may follow.

Start-up's writes are heard only by a subscription made before the start-up ended. ipykernel
publishes the ``starting`` status as its start-up's last act, after that flush: a subscriber that
hears it heard the start-up's streams too. Until then, the status of any request bounds the
start-up's end (requests are answered only once it ended), and so the timers it armed.

``ganymede execute``'s runner reads this from its own subscription; the server's kernel manager
from the one that watches each kernel's activity.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

STREAM_FLUSH_INTERVAL = 0.2
"""ipykernel's ``OutStream.flush_interval``, in seconds."""
QUIET_START = {"PYDEVD_DISABLE_FILE_VALIDATION": "1"}
"""For the environment of the kernels Ganymede starts, unless it says otherwise: debugpy,
imported by ipykernel, warns on stderr at every start of a Python 3.11+ kernel run without
``-Xfrozen_modules=off``, which arms a flush timer the first cell must then wait out; the check
only concerns breakpoints set in frozen standard-library modules."""


def quiet_start(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with ``QUIET_START`` where it does not set those variables itself."""
    return {**QUIET_START, **env}


class StreamFlushes:
    """What one kernel's iopub showed of the flush timers it armed; hand it every message heard.

    Kernel processes are told apart by their session (a restarted kernel is a new process,
    with a start-up of its own), so one watch can follow a kernel through its restarts.
    """

    def __init__(self) -> None:
        self._streams_due = -math.inf
        self._session: str | None = None
        self._startup_heard = False
        self._first_status: float | None = None

    def hear(self, message: Mapping[str, Any], at: float) -> None:
        """Note one iopub message, received at loop time ``at``."""
        session = (message.get("header") or {}).get("session")
        if session != self._session:
            self._session, self._startup_heard, self._first_status = session, False, None
        msg_type = message.get("msg_type")
        if msg_type == "stream":
            self._streams_due = max(self._streams_due, at + STREAM_FLUSH_INTERVAL)
        elif msg_type == "status":
            content = message.get("content") or {}
            if content.get("execution_state") == "starting":
                self._startup_heard = True
            elif self._first_status is None:
                self._first_status = at

    def due(self, session: str | None) -> float | None:
        """The loop time by which every timer the kernel process ``session`` (its messages'
        ``header.session``) armed has fired; None until a status of that process was heard."""
        if session != self._session:
            return None
        if self._startup_heard:
            return self._streams_due
        if self._first_status is None:
            return None
        return max(self._streams_due, self._first_status + STREAM_FLUSH_INTERVAL)
