"""jupyter-ai 3 in an environment of its own, layered on the test environment.

jupyter-ai's packages enable seven server extensions for every server started from the
environment they are installed in, one of which binds a port of its own (an MCP server on 3001)
and together they add seconds to each start. Installed beside the test suite, every server the
suite starts would carry them. Layered instead (a venv whose ``.pth`` file adds the test venv's
site-packages), they load only in the servers started from this environment's Python, while
Ganymede, jupyterlab-chat and jupyter-ai's router are the very packages under test.

Run by ``make setup`` as ``python tests/jupyter_ai_env.py``; the test finds it with
:func:`environment`.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

REQUIREMENT = "jupyter-ai==3.2.0"
LAYER_FILE = "ganymede-test-base.pth"


def environment(base_prefix: str = sys.prefix) -> Path:
    """Where the layered environment of the test venv at ``base_prefix`` lives."""
    return Path(f"{base_prefix}-jupyter-ai")


def python(base_prefix: str = sys.prefix) -> Path:
    return environment(base_prefix) / "bin" / "python"


def config_dir(base_prefix: str = sys.prefix) -> Path:
    """The environment's own Jupyter config, where jupyter-ai's packages enable themselves."""
    return environment(base_prefix) / "etc" / "jupyter"


def build(base_prefix: str = sys.prefix) -> None:
    target = environment(base_prefix)
    subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
    layered = python(base_prefix)
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
    subprocess.run(
        [str(layered), "-m", "pip", "install", "--quiet", "--no-warn-conflicts", REQUIREMENT],
        check=True,
    )


if __name__ == "__main__":
    build()
