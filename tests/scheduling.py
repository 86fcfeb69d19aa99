"""Longest test files first, from the times a whole run recorded in `tests/durations.json`.

`make test` gives each worker whole files (`--dist loadfile`), and a run ends when its last
file does. xdist hands out files in collection order (the Makefile turns off its own order,
by number of tests, which put a one-test, sixty-second file last), so this plugin sorts the
files by their recorded seconds: the long ones start at once and the short ones fill the
gaps at the end. A file the record does not know yet goes first, as the one that may be long.

`make durations` runs the suite with `--record-durations` and writes the record again.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

DURATIONS = Path(__file__).parent / "durations.json"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-durations",
        action="store_true",
        help=f"write each test file's seconds to {DURATIONS.name} at the end",
    )


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def recorded_seconds() -> dict[str, float]:
    return json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Sort whole files, keeping each file's tests in the order pytest's fixtures chose."""
    seconds = recorded_seconds()
    unknown = float("inf")
    items.sort(key=lambda item: -seconds.get(file_of(item.nodeid), unknown))


class DurationRecorder:
    """Sums every phase of every test by file, on the process that sees all reports."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[file_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Files that did not run keep their old entries; a file run in part (``-k``) would be
        recorded at what ran, so record whole files."""
        record = recorded_seconds()
        record.update((path, round(seconds, 1)) for path, seconds in self.seconds.items())
        DURATIONS.write_text(render(record))


def render(record: dict[str, float]) -> str:
    """One file a line, longest first, so a diff of the record reads as what got slower."""
    ordered = sorted(record.items(), key=lambda entry: -entry[1])
    lines = [f"  {json.dumps(path)}: {seconds}" for path, seconds in ordered]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def pytest_configure(config: pytest.Config) -> None:
    is_worker = hasattr(config, "workerinput")
    if config.getoption("--record-durations") and not is_worker:
        config.pluginmanager.register(DurationRecorder(), "ganymede-durations")
