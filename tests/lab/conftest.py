"""Lab extension tests install real wheels with pip into a venv layered on the test venv.

The layer keeps the installs out of the test venv: servers other tests start from that venv
(JupyterLab pages among them) never see a test extension, whichever worker runs what when.
"""

from __future__ import annotations

import json
import subprocess
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import layered_env
from tests.lab.wheels import build_wheel

# Every distribution these tests may install; nothing else in the layer is touched.
TEST_DISTRIBUTIONS = ("ganymede-test-ext", "ganymede-test-scoped", "ganymede-test-plain")


@dataclass(frozen=True)
class LabEnvironment:
    """A Python to run ``ganymede lab extension`` with, and where its pip puts extensions."""

    python: Path
    labextensions: Path
    purelib: Path

    def ganymede(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.python), "-m", "ganymede", "lab", "extension", *args],
            capture_output=True,
            text=True,
            timeout=110,
        )

    def listed(self) -> dict[str, dict[str, str | None]]:
        done = self.ganymede("list", "--json")
        assert done.returncode == 0, done.stderr
        return {item["name"]: item for item in json.loads(done.stdout)["extensions"]}

    def remove_test_distributions(self) -> None:
        present = [
            name
            for name in TEST_DISTRIBUTIONS
            if any(self.purelib.glob(f"{name.replace('-', '_')}-*.dist-info"))
        ]
        if present:
            subprocess.run(
                [str(self.python), "-m", "pip", "uninstall", "--yes", *present],
                check=True,
                capture_output=True,
                timeout=60,
            )


@pytest.fixture(scope="session")
def layer(tmp_path_factory: pytest.TempPathFactory) -> LabEnvironment:
    target = tmp_path_factory.mktemp("lab-layer") / "venv"
    python = layered_env.create(target)
    paths = json.loads(
        subprocess.run(
            [str(python), "-c", "import json, sysconfig; print(json.dumps(sysconfig.get_paths()))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    labextensions = Path(paths["data"]) / "share" / "jupyter" / "labextensions"
    return LabEnvironment(python, labextensions, Path(paths["purelib"]))


@pytest.fixture
def lab(layer: LabEnvironment) -> Iterator[LabEnvironment]:
    """The layer with no test distribution before the test, none after it, pass or fail."""
    layer.remove_test_distributions()
    yield layer
    layer.remove_test_distributions()


@pytest.fixture
def base_venv() -> LabEnvironment:
    """The test venv itself, for what only reads it (the extensions its ``lab`` extra brings)."""
    paths = sysconfig.get_paths()
    labextensions = Path(paths["data"]) / "share" / "jupyter" / "labextensions"
    return LabEnvironment(Path(paths["scripts"]) / "python", labextensions, Path(paths["purelib"]))


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
