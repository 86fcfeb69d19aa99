"""A real JupyterHub on loopback: configurable-http-proxy in front, DummyAuthenticator,
SimpleLocalProcessSpawner starting a single-user server for a user, and the requests a person
(a browser's cookie) or a program (a token) makes through the proxy.

The hub and its proxy are told port numbers, not handed sockets, so the ports are found free
just before; the single-user server's the spawner picks itself.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.serve.conftest import STOP_TIMEOUT

PROXY = "configurable-http-proxy"
SERVICE_TOKEN = "hub-test-service-token"
HANDED_IN_TOKEN = "handed-in-jupyter-token"
USER_CONFIG_HEADER = "X-From-User-Config"
"""What the user's own jupyter_server config would add to every answer, if it were read."""
"""A JUPYTER_TOKEN in the single-user server's environment, which the hub's login replaces."""
USER = "ada"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def proxy_command() -> str:
    found = shutil.which(PROXY)
    if found is None:
        pytest.fail(f"{PROXY} is not on PATH: `make test` installs it from npm")
    return found


@dataclass
class Hub:
    process: subprocess.Popen[bytes]
    url: str  # the proxy's, as a browser reaches the hub
    home: Path  # the user's home: the single-user server's root
    runtime_dir: Path  # the single-user server's Jupyter runtime dir
    log: Path

    def api(self) -> httpx.Client:
        headers = {"Authorization": f"token {SERVICE_TOKEN}"}
        return httpx.Client(base_url=f"{self.url}hub/api/", headers=headers, timeout=60)

    @property
    def user_url(self) -> str:
        return f"{self.url}user/{USER}/"

    def start_server(self) -> None:
        with self.api() as api:
            if api.get(f"users/{USER}").status_code == 404:
                assert api.post(f"users/{USER}").status_code == 201
            answer = api.post(f"users/{USER}/server")
            assert answer.status_code in (201, 202), answer.text
            deadline = time.monotonic() + 180
            while not api.get(f"users/{USER}").json()["servers"].get("", {}).get("ready"):
                if time.monotonic() > deadline or self.process.poll() is not None:
                    pytest.fail(f"the server never got ready:\n{self.log.read_text()[-4000:]}")
                time.sleep(0.2)

    def stop_server(self) -> None:
        """As the hub's Stop button does: the hub answers once the server has gone."""
        with self.api() as api:
            answer = api.delete(f"users/{USER}/server", timeout=120)
            assert answer.status_code == 204, answer.text

    def user_token(self) -> str:
        with self.api() as api:
            answer = api.post(f"users/{USER}/tokens", json={"note": "test"})
            assert answer.status_code == 201, answer.text
            return str(answer.json()["token"])

    def logged_in(self) -> httpx.Client:
        """A browser's session: logged in at the hub, then through the hub's OAuth at the
        user's server, holding the cookies both set; its ``X-XSRFToken`` the server's."""
        client = httpx.Client(base_url=self.user_url, timeout=60, follow_redirects=True)
        login = f"{self.url}hub/login"
        client.get(login)
        form = {"username": USER, "password": "any", "_xsrf": client.cookies.get("_xsrf", "")}
        assert client.post(login, data=form).status_code == 200
        page = client.get("lab")
        assert page.status_code == 200, page.text[:2000]
        xsrf = client.cookies.get("_xsrf", path=f"/user/{USER}/")
        assert xsrf, "the server set no _xsrf cookie"
        client.headers["X-XSRFToken"] = xsrf
        return client


def hub_config(home: Path, work: Path, command: list[str], args: list[str]) -> tuple[str, str]:
    """The hub's config file, and the URL it serves at."""
    proxy_port, api_port, hub_port = free_port(), free_port(), free_port()
    environment = {
        "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
        "JUPYTER_DATA_DIR": str(work / "data"),
        "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
        "XDG_DATA_HOME": str(work / "xdg"),
        "JUPYTER_TOKEN": HANDED_IN_TOKEN,
    }
    settings = {
        "JupyterHub.bind_url": f"http://127.0.0.1:{proxy_port}",
        "JupyterHub.hub_bind_url": f"http://127.0.0.1:{hub_port}",
        "JupyterHub.db_url": f"sqlite:///{work / 'hub.sqlite'}",
        "JupyterHub.cookie_secret_file": str(work / "cookie_secret"),
        "JupyterHub.authenticator_class": "dummy",
        "JupyterHub.spawner_class": "jupyterhub.spawner.SimpleLocalProcessSpawner",
        "JupyterHub.services": [{"name": "tester", "api_token": SERVICE_TOKEN}],
        "JupyterHub.load_roles": [
            {
                "name": "tester",
                "scopes": ["admin:users", "admin:servers", "tokens", "access:servers"],
                "services": ["tester"],
            }
        ],
        "Authenticator.allow_all": True,
        "ConfigurableHTTPProxy.command": [proxy_command()],
        "ConfigurableHTTPProxy.api_url": f"http://127.0.0.1:{api_port}",
        "ConfigurableHTTPProxy.pid_file": str(work / "proxy.pid"),
        "SimpleLocalProcessSpawner.home_dir_template": str(home),
        "Spawner.cmd": command,
        "Spawner.args": args,
        "Spawner.environment": environment,
        # The user's own Jupyter config (under their home) is not read: USER_CONFIG_HEADER.
        "Spawner.disable_user_config": True,
        "Spawner.start_timeout": 180,
        "Spawner.http_timeout": 180,
    }
    lines = [f"c.{name} = {value!r}" for name, value in settings.items()]
    return "\n".join(lines) + "\n", f"http://127.0.0.1:{proxy_port}/"


@contextmanager
def running_hub(work: Path, command: list[str], args: list[str]) -> Iterator[Hub]:
    home = work / "home"
    user_config = home / ".jupyter" / "jupyter_server_config.json"
    user_config.parent.mkdir(parents=True)
    headers = {"ServerApp": {"tornado_settings": {"headers": {USER_CONFIG_HEADER: "read"}}}}
    user_config.write_text(json.dumps(headers))
    for name in ("runtime", "data", "xdg"):
        (work / name).mkdir()
    config = work / "jupyterhub_config.py"
    text, url = hub_config(home, work, command, args)
    config.write_text(text)
    log = work / "hub.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(config)],
            cwd=work,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    hub = Hub(process, url, home, work / "runtime", log)
    try:
        _wait_up(hub)
        yield hub
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_up(hub: Hub) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if hub.process.poll() is not None:
            pytest.fail(f"the hub exited {hub.process.returncode}:\n{hub.log.read_text()[-4000:]}")
        try:
            if httpx.get(f"{hub.url}hub/api/", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    pytest.fail(f"the hub did not come up:\n{hub.log.read_text()[-4000:]}")
