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
        help=f"write each test file's seconds and tests to {DURATIONS.name} at the end",
    )


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def recorded_seconds() -> dict[str, float]:
    if not DURATIONS.exists():
        return {}
    return {path: entry["seconds"] for path, entry in json.loads(DURATIONS.read_text()).items()}


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
        self.tests: Counter[str] = Counter()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = file_of(report.nodeid)
        self.seconds[path] += report.duration
        if report.when == "call" or (report.when == "setup" and report.skipped):
            self.tests[path] += 1

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Files that did not run keep their old entries, so a partial run updates only its own."""
        record = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
        for path in self.seconds:
            record[path] = {"seconds": round(self.seconds[path], 1), "tests": self.tests[path]}
        DURATIONS.write_text(render(record))


def render(record: dict[str, dict[str, float]]) -> str:
    """One file a line, longest first, so a diff of the record reads as what got slower."""
    ordered = sorted(record.items(), key=lambda entry: -entry[1]["seconds"])
    lines = [f"  {json.dumps(path)}: {json.dumps(entry)}" for path, entry in ordered]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def pytest_configure(config: pytest.Config) -> None:
    is_worker = hasattr(config, "workerinput")
    if config.getoption("--record-durations") and not is_worker:
        config.pluginmanager.register(DurationRecorder(), "ganymede-durations")
