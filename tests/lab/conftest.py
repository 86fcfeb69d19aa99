"""Lab extension tests install real wheels into the shared environment; these put it back."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

from tests.lab.wheels import build_wheel

# Every distribution these tests may install; nothing else in the environment is touched.
TEST_DISTRIBUTIONS = ("ganymede-test-ext", "ganymede-test-scoped", "ganymede-test-plain")


def remove_test_distributions() -> None:
    importlib.invalidate_caches()
    present = []
    for name in TEST_DISTRIBUTIONS:
        try:
            distribution(name)
        except PackageNotFoundError:
            continue
        present.append(name)
    if present:
        subprocess.run(
            [sys.executable, "-m", "pip", "uninstall", "--yes", *present],
            check=True,
            capture_output=True,
            timeout=60,
        )


@pytest.fixture
def clean_environment() -> Iterator[None]:
    """No test distribution before the test, none after it, whether it passed or not."""
    remove_test_distributions()
    yield
    remove_test_distributions()


@pytest.fixture
def wheelhouse(tmp_path: Path) -> Path:
    """A directory of test wheels: one unscoped extension, one scoped that needs the plain one."""
    house = tmp_path / "wheelhouse"
    house.mkdir()
    build_wheel(house, "ganymede-test-ext", "0.1.0", extension="ganymede-test-ext")
    build_wheel(
        house,
        "ganymede-test-scoped",
        "2.0.0",
        extension="@ganymede-test/scoped-ext",
        extension_version="2.0.1",
        requires=("ganymede-test-plain",),
    )
    build_wheel(house, "ganymede-test-plain", "1.0.0")
    return house
