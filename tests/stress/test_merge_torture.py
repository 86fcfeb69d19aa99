"""The merge torture's short run: 30 cases of room edits and file rewrites on a real server,
each held against the independent oracle of SPEC §3's merge rules."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from stress.merge_torture import SHORT_CASES, report, torture

pytestmark = pytest.mark.slow

SEED = 20261202


@pytest.mark.timeout(300)  # a loaded 2-core machine
async def test_thirty_cases_lose_no_edit_and_leave_only_valid_files(tmp_path: Path) -> None:
    started = time.monotonic()
    tally = await torture(SHORT_CASES, rooms=3, servers=1, seed=SEED, home=tmp_path)
    figures = report(tally, time.monotonic() - started)
    assert tally.cases == SHORT_CASES, figures
    assert tally.file_writes > 0 and tally.saves > 0, figures
    assert (tally.failed_cases, tally.lost_edits, tally.invalid_files) == (0, 0, 0), figures
