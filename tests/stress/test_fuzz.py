"""The fuzz script's short run: 2,000 random and mutated room frames and HTTP bodies, each
refused with a clear error or taken, the server up throughout and the room still its file."""

from __future__ import annotations

from pathlib import Path

import pytest

from stress.fuzz import SHORT_INPUTS, fuzz

pytestmark = pytest.mark.slow

# Seconds of real work on a loaded 2-core machine; the suite's 120 s default is too tight.
SLOW_MACHINE_TIMEOUT = 300

ODD_EDIT_INPUTS = 60
ODD_EDIT_SHARE = 0.3  # of the inputs: enough odd edits that each kind comes up


@pytest.mark.timeout(SLOW_MACHINE_TIMEOUT)
def test_bad_frames_and_bodies_get_clear_errors_and_corrupt_nothing(tmp_path: Path) -> None:
    tally, _ = fuzz(tmp_path, SHORT_INPUTS, seed=3)
    assert tally.failures == []
    assert tally.inputs == SHORT_INPUTS
    closes = sum(count for kind, count in tally.outcomes.items() if kind.startswith("frame closed"))
    refusals = sum(count for kind, count in tally.outcomes.items() if kind.endswith(" 400"))
    assert closes > 0
    assert refusals > 0


@pytest.mark.timeout(SLOW_MACHINE_TIMEOUT)
def test_well_formed_edits_of_odd_shape_leave_the_room_saveable(tmp_path: Path) -> None:
    tally, _ = fuzz(tmp_path, ODD_EDIT_INPUTS, seed=5, odd_edit_share=ODD_EDIT_SHARE)
    assert tally.failures == []
    assert tally.outcomes["odd edit closed 1007"] > 0  # refused
    assert tally.outcomes["odd edit accepted"] > 0  # the generator's good edits: taken
