"""``ganymede serve`` as a person runs it: a real process, its URL, its token, Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.serve.conftest import STOP_TIMEOUT, jupyter_env, serve_command, start_server, stop_server

pytestmark = pytest.mark.slow

PAGE_CONFIG = re.compile(
    r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', re.S
)
ROOT_WARNING = "ganymede: warning: running as root: kernels and terminals get root's rights"


def page_config(client: httpx.Client) -> dict[str, object]:
    page = client.get("lab")
    assert page.status_code == 200
    found = PAGE_CONFIG.search(page.text)
    assert found, "no page config in /lab"
    return dict(json.loads(found.group(1)))


def run_serve(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A ``ganymede serve`` expected to exit before it serves anything."""
    return subprocess.run(
        serve_command(*args), capture_output=True, text=True, env=env, timeout=STOP_TIMEOUT
    )


def test_serve_prints_its_url_answers_with_the_token_and_stops_kernels_on_ctrl_c(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    env = jupyter_env(tmp_path / "jupyter", JUPYTER_TOKEN="from-the-environment")
    server = start_server(root, env, "--token", "from-the-flag")
    assert server.token == "from-the-flag"
    try:
        runtime = Path(env["JUPYTER_RUNTIME_DIR"])
        runtime_files = list(runtime.glob("jpserver-*.json"))
        assert len(runtime_files) == 1
        info = json.loads(runtime_files[0].read_text())
        assert info["port"] == server.port != 0
        assert info["token"] == server.token
        assert Path(info["root_dir"]) == root.resolve()
        assert server.url.startswith(f"http://127.0.0.1:{server.port}/lab?token=")

        with server.client() as client:
            assert client.get("api/status").status_code == 200
            assert page_config(client)["serverSideExecution"] == "true"
            started = client.post("api/kernels", json={"name": "python3"})
            assert started.status_code == 201
            kernel_file = runtime / f"kernel-{started.json()['id']}.json"
            assert kernel_file.exists()
            assert server.kernel_info(started.json()["id"])["status"] == "ok"
        with server.client(authenticated=False) as anonymous:
            assert anonymous.get("api/status").status_code == 403
            assert anonymous.post("api/fileid/index", params={"path": "x"}).status_code == 403
            assert anonymous.get("lab").status_code in (302, 401, 403)
    finally:
        status = server.interrupt()
        stop_server(server)
    assert status == 0
    assert not runtime_files[0].exists()
    assert not kernel_file.exists()
    log = server.log.read_text()
    assert "Traceback" not in log
    assert "Shut down this Jupyter server" not in log
    root_warnings = [line for line in log.splitlines() if "as root" in line]
    assert root_warnings == ([ROOT_WARNING] if os.geteuid() == 0 else [])


def test_a_token_handed_in_is_printed_masked_and_clients_still_find_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    env = jupyter_env(tmp_path / "jupyter", JUPYTER_TOKEN="handed-in-by-the-environment")
    server = start_server(root, env, "--token", "handed-in-by-the-flag")
    try:
        assert server.printed.endswith("/lab?token=...")
        changes = ("mcp", "changes", "--agent", "probe", "--url", server.printed)
        done = subprocess.run(
            [sys.executable, "-m", "ganymede", *changes],
            capture_output=True,
            text=True,
            env=env,
            cwd=root,
            timeout=STOP_TIMEOUT,
        )
        assert done.returncode == 0, done.stderr
    finally:
        stop_server(server)
    assert "handed-in-by" not in server.log.read_text()


def test_pass_through_options_replace_the_commands_own(tmp_path: Path) -> None:
    """Each names a trait the command sets itself (the port from ``--port 0``, the others from
    its defaults), which traitlets would refuse twice."""
    root = tmp_path / "root"
    root.mkdir()
    args = ("--ServerApp.ip=localhost", "--ServerApp.port=0", "--ServerApp.open_browser=False")
    server = start_server(root, jupyter_env(tmp_path / "jupyter"), *args)
    try:
        assert server.url.startswith("http://localhost:")
        assert server.port != 0
        with server.client() as client:
            assert client.get("api/status").status_code == 200
    finally:
        stop_server(server)


def test_config_environment_token_and_pass_through_options_reach_the_server(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "ganymede.toml").write_text("[serve]\nserver_side_execution = false\n")
    env = jupyter_env(tmp_path / "jupyter", JUPYTER_TOKEN="from-the-environment")
    server = start_server(root, env, "--ServerApp.base_url=/nested/")
    try:
        assert server.token == "from-the-environment"
        assert server.base.endswith(f":{server.port}/nested/")
        with server.client() as client:
            assert client.get("api/status").status_code == 200
            assert "serverSideExecution" not in page_config(client)
    finally:
        stop_server(server)


def test_the_root_can_come_from_the_config_in_the_jupyter_config_dir(tmp_path: Path) -> None:
    env = jupyter_env(tmp_path / "jupyter")
    config_dir = Path(env["JUPYTER_CONFIG_DIR"])
    (config_dir / "ganymede.toml").write_text('[serve]\nroot = "../notebooks"\n')
    root = config_dir.parent / "notebooks"
    root.mkdir()
    (root / "marker.txt").write_text("here")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server = start_server(root, env, root_from_config_in=elsewhere)
    try:
        with server.client() as client:
            listing = client.get("api/contents").json()["content"]
            assert [entry["name"] for entry in listing] == ["marker.txt"]
        info = json.loads(
            next(Path(env["JUPYTER_RUNTIME_DIR"]).glob("jpserver-*.json")).read_text()
        )
        assert Path(info["root_dir"]) == root.resolve()
    finally:
        stop_server(server)


def test_an_unknown_config_key_is_one_line_naming_key_and_file(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    config = root / "ganymede.toml"
    config.write_text("[serve]\nport = 9999\nsave_dealy = 2\n")
    done = run_serve(str(root), "--no-browser", env=jupyter_env(tmp_path / "jupyter"))
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("ganymede serve: error: ")
    assert "save_dealy" in lines[0]
    assert str(config) in lines[0]
    assert done.stdout == ""


def test_a_host_path_no_grant_may_hold_is_one_line_before_anything_starts(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "ganymede.toml").write_text('[host]\nread = ["../outside"]\n')
    done = run_serve(str(root), "--no-browser", env=jupyter_env(tmp_path / "jupyter"))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"ganymede serve: error: {root / 'ganymede.toml'}: [host]: '../outside': '..' not allowed"
    ]


def test_a_server_whose_ganymede_extension_fails_to_start_stops_instead_of_serving(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    missing = tmp_path / "gone.toml"
    done = run_serve(
        str(root),
        "--no-browser",
        "--port",
        "0",
        f"--GanymedeExtension.ganymede_toml={missing}",
        env=jupyter_env(tmp_path / "jupyter"),
    )
    assert done.returncode == 1
    assert "the Ganymede extension failed to start" in done.stderr
    assert "ganymede: serving" not in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing-dir"], "not a directory"),
        ([".", "stray"], "unexpected argument 'stray'"),
        ([".", "--config", "nowhere.toml"], "config file not found"),
        ([".", "--port", "many"], "Invalid value for '--port'"),
    ],
)
def test_usage_errors_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    env = jupyter_env(tmp_path / "jupyter")
    done = subprocess.run(
        serve_command(*args), capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1
    assert message in done.stderr


def test_help_names_every_option(tmp_path: Path) -> None:
    done = run_serve("--help", env=jupyter_env(tmp_path / "jupyter"))
    assert done.returncode == 0
    for option in ("--port", "--ip", "--token", "--no-browser", "--config", "--gateway-url"):
        assert option in done.stdout
    assert "--Class.trait=value" in done.stdout


def test_the_cli_does_not_import_the_server_until_serve_runs() -> None:
    probe = "import sys, ganymede.cli.main; print('jupyter_server' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("args", "hub_env", "message"),
    [
        ([".", "--token", "t"], {}, "--token: under JupyterHub the hub logs users in"),
        ([], {"JUPYTERHUB_ROOT_DIR": "/nowhere/at/all"}, "/nowhere/at/all: not a directory"),
    ],
)
def test_usage_errors_under_a_hub_exit_2_with_one_line(
    tmp_path: Path, args: list[str], hub_env: dict[str, str], message: str
) -> None:
    env = jupyter_env(tmp_path / "jupyter", JUPYTERHUB_SERVICE_URL="http://127.0.0.1:1/", **hub_env)
    done = subprocess.run(
        serve_command(*args), capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert message in done.stderr
