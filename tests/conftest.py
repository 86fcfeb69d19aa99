"""Shared fixtures: every test gets its own Jupyter data, runtime and config dirs."""

from __future__ import annotations

from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture(autouse=True)
def isolated_jupyter(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point Jupyter's dirs at a fresh temporary tree so tests never touch the user's files."""
    home = tmp_path_factory.mktemp("jupyter")
    for name in ("data", "runtime", "config"):
        (home / name).mkdir()
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(home / "data"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(home / "runtime"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.delenv("GANYMEDE_PARAMS", raising=False)
    return home
