"""What the notebooks core's tests share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty root to serve notebooks from (a module may set up its own instead)."""
    root = tmp_path / "root"
    root.mkdir()
    return root
