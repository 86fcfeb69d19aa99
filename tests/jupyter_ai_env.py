"""jupyter-ai 3 in an environment of its own, layered on the test environment.

jupyter-ai's packages enable seven server extensions for every server started from the
environment they are installed in, one of which binds a port of its own (an MCP server on 3001)
and together they add seconds to each start. Installed beside the test suite, every server the
suite starts would carry them. Layered instead (a venv whose ``.pth`` file adds the test venv's
site-packages, :mod:`tests.layered_env`), they load only in the servers started from this
environment's Python, while Ganymede, jupyterlab-chat and jupyter-ai's router are the very
packages under test.

Run by ``make test`` as ``python -m tests.jupyter_ai_env``; the test finds it with
:func:`python`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests import layered_env

REQUIREMENT = "jupyter-ai==3.2.0"


def environment(base_prefix: str = sys.prefix) -> Path:
    """Where the layered environment of the test venv at ``base_prefix`` lives."""
    return Path(f"{base_prefix}-jupyter-ai")


def python(base_prefix: str = sys.prefix) -> Path:
    return layered_env.python(environment(base_prefix))


def config_dir(base_prefix: str = sys.prefix) -> Path:
    """The environment's own Jupyter config, where jupyter-ai's packages enable themselves."""
    return environment(base_prefix) / "etc" / "jupyter"


def build(base_prefix: str = sys.prefix) -> None:
    layered = layered_env.create(environment(base_prefix))
    subprocess.run(
        [str(layered), "-m", "pip", "install", "--quiet", "--no-warn-conflicts", REQUIREMENT],
        check=True,
    )


if __name__ == "__main__":
    build()
