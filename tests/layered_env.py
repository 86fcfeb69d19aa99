"""A venv layered on the test venv, for packages that must not be beside the test suite.

Its ``.pth`` file adds the test venv's site-packages after its own, so Ganymede and everything
else come from the test venv while what is installed in the layer shadows it. Jupyter's config
and data paths follow the layer's prefix, not the test venv's: the servers started from its
Python read only the server config and JupyterLab extensions installed in the layer.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

LAYER_FILE = "ganymede-test-base.pth"


def python(target: Path) -> Path:
    return target / "bin" / "python"


def create(target: Path) -> Path:
    """Make the layered venv at ``target`` on this interpreter's; its Python."""
    subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
    layered = python(target)
    purelib = subprocess.run(
        [str(layered), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    base_purelib = sysconfig.get_paths()["purelib"]
    # site.addsitedir, not a bare path: the test venv's own .pth files (Ganymede's editable
    # install among them) must be read too.
    (Path(purelib) / LAYER_FILE).write_text(f"import site; site.addsitedir({base_purelib!r})\n")
    return layered
