"""A real ``ganymede serve`` on a loopback port the server bound itself (``--port 0``).

The server prints its URL on stdout once it listens, so tests wait on that line rather than on
time; the port it chose is also in its ``jpserver-<pid>.json`` runtime file.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from tests.serve.websocket import hang_up

SERVING = "ganymede: serving "
STOP_TIMEOUT = 60


@dataclass
class RunningServer:
    process: subprocess.Popen[str]
    root: Path
    url: str
    log: Path
    printed: str = ""  # the URL as the server printed it (a token handed in, masked)

    @property
    def base(self) -> str:
        """``http://127.0.0.1:PORT/<base_url>``, the prefix every API path goes under."""
        parts = urllib.parse.urlsplit(self.url)
        base_path = parts.path.rsplit("lab", 1)[0]
        return f"{parts.scheme}://{parts.netloc}{base_path}"

    @property
    def port(self) -> int:
        return urllib.parse.urlsplit(self.url).port or 80

    @property
    def token(self) -> str:
        return urllib.parse.parse_qs(urllib.parse.urlsplit(self.url).query)["token"][0]

    def client(self, authenticated: bool = True) -> httpx.Client:
        headers = {"Authorization": f"token {self.token}"} if authenticated else {}
        return httpx.Client(base_url=self.base, headers=headers, timeout=30)

    def kernel_info(self, kernel_id: str) -> dict[str, object]:
        """Ask a kernel for its info over the kernel websocket, as JupyterLab would."""
        return asyncio.run(self._kernel_info(kernel_id))

    async def _kernel_info(self, kernel_id: str) -> dict[str, object]:
        url = self.base.replace("http", "ws", 1) + f"api/kernels/{kernel_id}/channels"
        request = HTTPRequest(url, headers={"Authorization": f"token {self.token}"})
        connection = await websocket_connect(request)
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "kernel_info_request", "session": msg_id}
        header |= {"username": "test", "version": "5.3", "date": ""}
        message = {"header": header, "parent_header": {}, "metadata": {}, "content": {}}
        await connection.write_message(json.dumps({**message, "channel": "shell"}))
        try:
            while True:
                frame = await connection.read_message()
                assert isinstance(frame, str), "the kernel websocket closed"
                reply = json.loads(frame)
                if reply["parent_header"].get("msg_id") == msg_id and reply["channel"] == "shell":
                    return dict(reply["content"])
        finally:
            await hang_up(connection)

    def interrupt(self) -> int:
        """Ctrl-C, once, and the exit status."""
        self.process.send_signal(signal.SIGINT)
        return self.wait_stopped()

    def wait_stopped(self) -> int:
        """The exit status once the server has stopped. One that will not is made to dump
        every thread's stack into its log (``PYTHONFAULTHANDLER``), which the failure shows.

        The failure ends with the log from before that dump, where the server's clean-up names
        the tasks it still waits on, and with the test: a CI report that keeps only the end of
        a long failure keeps what says where the stop hung."""
        try:
            return self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            logged = self.log.read_text()
            self.process.send_signal(signal.SIGABRT)
            self.process.wait(timeout=STOP_TIMEOUT)
            threads = self.log.read_text()[len(logged) :]
            tail = "\n".join(logged.splitlines()[-200:])
            pytest.fail(
                f"its threads:\n{threads}\nits log before that ends:\n{tail}\n"
                f"the server did not stop within {STOP_TIMEOUT} s, in "
                f"{os.environ.get('PYTEST_CURRENT_TEST')} (above: its threads, then its log)"
            )


def jupyter_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment for a server whose Jupyter dirs live under ``home``."""
    env = dict(os.environ)
    for name in ("data", "runtime", "config"):
        (home / name).mkdir(parents=True, exist_ok=True)
        env[f"JUPYTER_{name.upper()}_DIR"] = str(home / name)
    env.pop("JUPYTER_TOKEN", None)
    # Deletes through the contents API go to the trash, which lives under XDG_DATA_HOME.
    env["XDG_DATA_HOME"] = str(home / "xdg")
    env["PYTHONFAULTHANDLER"] = "1"  # a server that hangs can be made to show where
    env.update(extra)
    return env


def serve_command(*args: str, python: str = sys.executable) -> list[str]:
    return [python, "-m", "ganymede", "serve", *args]


def start_server(
    root: Path,
    env: dict[str, str],
    *args: str,
    root_from_config_in: Path | None = None,
    python: str = sys.executable,
) -> RunningServer:
    """Serve ``root``: named on the command line, or left to the config found from a directory;
    ``python`` is the environment the server runs in."""
    log = Path(env["JUPYTER_RUNTIME_DIR"]).parent / "server.log"
    root_argument = [] if root_from_config_in else [str(root)]
    with log.open("w") as stderr:
        process = subprocess.Popen(
            serve_command(*root_argument, "--port", "0", "--no-browser", *args, python=python),
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=env,
            cwd=root_from_config_in,
        )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(SERVING):
            url = line.rsplit(" at ", 1)[1].strip()
            return RunningServer(process, root, _unmasked(url, env, process.pid), log, url)
    process.wait(timeout=STOP_TIMEOUT)
    pytest.fail(f"ganymede serve exited {process.returncode}:\n{log.read_text()}")


def _unmasked(url: str, env: dict[str, str], pid: int) -> str:
    """The URL with the token in full: a server prints one handed to it masked (``token=...``),
    and clients find it in the server's runtime file, as this does."""
    parts = urllib.parse.urlsplit(url)
    if urllib.parse.parse_qs(parts.query).get("token") != ["..."]:
        return url
    runtime_file = Path(env["JUPYTER_RUNTIME_DIR"]) / f"jpserver-{pid}.json"
    token = json.loads(runtime_file.read_text())["token"]
    return parts._replace(query=urllib.parse.urlencode({"token": token})).geturl()


def stop_server(server: RunningServer) -> None:
    if server.process.poll() is None:
        server.interrupt()
    assert server.process.stdout is not None
    server.process.stdout.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One server per test module; tests use their own files under its root."""
    home = tmp_path_factory.mktemp("server")
    root = home / "root"
    root.mkdir()
    running = start_server(root, jupyter_env(home / "jupyter"))
    yield running
    stop_server(running)


@pytest.fixture
def api(server: RunningServer) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client
