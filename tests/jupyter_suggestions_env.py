"""jupyter-collaboration 3's JupyterLab frontend with jupyter-suggestions, in an environment of
its own layered on the test environment (:mod:`tests.layered_env`).

jupyter-suggestions' RTC manager (jupyter-suggestions-rtc 0.1.1) registers only with
jupyter-collaboration 3's frontend: JupyterLab 4.4 with jupyter-docprovider and
jupyter-collaboration-ui 1.1, whose ``@jupyter/collaborative-drive`` 3.x provides the
``ICollaborativeDrive`` it asks for. The test venv has the frontend the ``lab`` extra installs
(JupyterLab 4.6, docprovider 3) and extensions built on ``@jupyter/collaborative-drive`` 5.x
(jupyterlab-chat's, JupyterCAD's); the page loads the newest of those, and the manager never
registers there.

Layered, JupyterLab 4.4 and the frontend shadow the test venv's, while Ganymede and the rest
are the very packages under test; the test venv's JupyterLab extensions live under its own
``share/jupyter``, which this environment's data path does not include, so the JupyterLab
served from this environment's Python loads only the extensions installed here.

Run by ``make test`` as ``python -m tests.jupyter_suggestions_env``; the test finds it with
:func:`python`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests import layered_env

# Without their dependencies: JupyterLab 4.4's are all in the test venv already (JupyterLab
# 4.6's), and jupyter-suggestions-rtc asks for jupyter-collaboration, whose server Ganymede's
# rooms replace (and whose own dependencies would bring a later frontend back).
REQUIREMENTS = (
    "jupyterlab==4.4.10",
    "jupyter-docprovider==1.1.2",
    "jupyter-collaboration-ui==1.1.2",
    "jupyter-suggestions==0.1.1",
    "jupyter-suggestions-core==0.1.1",
    "jupyter-suggestions-rtc==0.1.1",
)
SERVER_CONFIG = Path("etc", "jupyter", "jupyter_server_config.d")
# The server extensions of JupyterLab's own dependencies, which enable themselves with these
# files in the test venv's config (not read here): without jupyter-lsp's, the page's LSP
# status requests get 404s; without the terminals', it has no terminal.
BASE_SERVER_CONFIGS = (
    "jupyter-lsp-jupyter-server.json",
    "jupyter_server_terminals.json",
    "notebook_shim.json",
)


def environment(base_prefix: str = sys.prefix) -> Path:
    """Where the layered environment of the test venv at ``base_prefix`` lives."""
    return Path(f"{base_prefix}-jupyter-suggestions")


def python(base_prefix: str = sys.prefix) -> Path:
    return layered_env.python(environment(base_prefix))


def build(base_prefix: str = sys.prefix) -> None:
    target = environment(base_prefix)
    layered = layered_env.create(target)
    # --ignore-installed: pip sees the test venv's JupyterLab through the layer and would try to
    # uninstall it; it stays there, shadowed by this one.
    install = ["install", "--quiet", "--no-deps", "--ignore-installed", *REQUIREMENTS]
    subprocess.run([str(layered), "-m", "pip", *install], check=True)
    (target / SERVER_CONFIG).mkdir(parents=True, exist_ok=True)
    for name in BASE_SERVER_CONFIGS:
        shutil.copyfile(Path(base_prefix) / SERVER_CONFIG / name, target / SERVER_CONFIG / name)


if __name__ == "__main__":
    build()
