"""The crash-during-save short run: five ``kill -9``s of a server whose rooms autosave under
continuous typing; every file stays a complete version of what was typed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from stress.crash_save import NOTEBOOKS, SHORT_KILLS, crash_repeatedly, report

pytestmark = pytest.mark.slow

SEED = 20261202


@pytest.mark.timeout(300)
async def test_five_kills_during_autosave_leave_only_complete_versions(tmp_path: Path) -> None:
    started = time.monotonic()
    tally = await crash_repeatedly(SHORT_KILLS, seed=SEED, home=tmp_path)
    figures = report(tally, time.monotonic() - started)
    assert tally.kills == SHORT_KILLS, figures
    assert tally.files_checked == SHORT_KILLS * NOTEBOOKS, figures
    assert tally.failures == [], figures
