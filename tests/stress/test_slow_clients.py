"""The slow-clients script's short run: a client that stops reading is closed 1008 at 10,000
messages behind, a killed one is let go of at once, a vanished one is dropped after a ping
timeout configured down to 3 s, and the others carry on."""

from __future__ import annotations

from pathlib import Path

import pytest

from stress.slow_clients import QUEUE_MESSAGES, SHORT_PINGS, slow_clients

# Seconds of real work on a loaded 2-core machine; the suite's 120 s default is too tight.
SLOW_MACHINE_TIMEOUT = 300


@pytest.mark.timeout(SLOW_MACHINE_TIMEOUT)
def test_slow_killed_and_vanished_clients_go_and_the_others_stay(tmp_path: Path) -> None:
    figures = slow_clients(tmp_path, SHORT_PINGS)
    assert (figures.stalled_close_code, figures.stalled_behind) == (1008, QUEUE_MESSAGES)
    assert figures.reader_missed == 0
    assert figures.silent_close_code == 1001
    assert figures.silent_dropped_after >= SHORT_PINGS[1]
    assert figures.others_carried_on
