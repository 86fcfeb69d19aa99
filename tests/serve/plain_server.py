"""A plain ``jupyter server`` (or any jupyter_server entry point) on a loopback port it picked,
with no Ganymede flag: what Ganymede's config file, installed with it, makes of it.

It prints nothing parseable for a test, so the port comes from its ``jpserver-<pid>.json``
runtime file, which it writes once it listens.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.serve.conftest import STOP_TIMEOUT, RunningServer

TOKEN = "plain-server-token"
REPO = Path(__file__).resolve().parents[2]
SERVER_DOCUMENTS_PACKAGES = ("jupyter-server-documents", "jupyter-server-fileid")
"""jupyter-server-documents and the dependency of its own Ganymede's environment lacks."""
ROOT_FLAGS = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
"""jupyter_server refuses to run as root without it (CI runs as root); nothing of Ganymede's."""


def start_jupyter_server(
    root: Path,
    env: dict[str, str],
    *args: str,
    module: str = "jupyter_server",
    stdin: int = subprocess.DEVNULL,
) -> RunningServer:
    """``python -m <module>`` serving ``root``, its stdin not a terminal (as a spawner runs it)
    unless given one; the tests' own modules importable (a user's contents manager lives
    there)."""
    runtime = Path(env["JUPYTER_RUNTIME_DIR"])
    log = runtime.parent / "server.log"
    env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))}
    argv = [
        sys.executable,
        "-m",
        module,
        f"--ServerApp.root_dir={root}",
        "--ServerApp.port=0",
        "--ServerApp.open_browser=False",
        f"--IdentityProvider.token={TOKEN}",
        *ROOT_FLAGS,
        *args,
    ]
    with log.open("w") as output:
        process = subprocess.Popen(
            argv, stdin=stdin, stdout=output, stderr=subprocess.STDOUT, env=env
        )
    info = _server_info(runtime / f"jpserver-{process.pid}.json", process, log)
    url = f"http://127.0.0.1:{info['port']}{info['base_url']}lab?token={info['token']}"
    return RunningServer(process, root, url, log)  # type: ignore[arg-type]


def _server_info(file: Path, process: subprocess.Popen[bytes], log: Path) -> dict[str, object]:
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            return dict(json.loads(file.read_text()))
        except (OSError, ValueError):
            time.sleep(0.05)  # not written yet, or half-written
    process.kill()
    pytest.fail(f"no runtime file after {STOP_TIMEOUT} s:\n{log.read_text()[-3000:]}")


def stop_plain_server(server: RunningServer) -> None:
    if server.process.poll() is None:
        server.interrupt()


def install_apart(target: Path, *requirements: str) -> Path:
    """Install ``requirements`` from PyPI into ``target``, apart from this environment and
    without their dependencies (Ganymede's own, or not needed by what a test reaches): a server
    started with ``target`` on ``PYTHONPATH``, ``target/etc/jupyter`` on ``JUPYTER_CONFIG_PATH``
    and ``target/share/jupyter`` on ``JUPYTER_PATH`` finds their server extensions, the config
    files enabling them and their JupyterLab extensions."""
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target"]
    subprocess.run([*install, str(target), *requirements], check=True, capture_output=True)
    return target


def apart_env(env: dict[str, str], target: Path) -> dict[str, str]:
    """``env`` with what :func:`install_apart` put in ``target`` found first."""
    return {
        **env,
        "PYTHONPATH": str(target),
        "JUPYTER_CONFIG_PATH": str(target / "etc" / "jupyter"),
        "JUPYTER_PATH": str(target / "share" / "jupyter"),
    }
