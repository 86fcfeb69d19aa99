"""``ganymede grant``: on the store with no server, and through a real running server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ganymede.grant import STORE_NAME
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server

WANTS = ["notebooks.run"]


def ganymede_grant(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own, with the test's Jupyter dirs unless ``env`` is given."""
    environment = env if env is not None else dict(os.environ)
    environment = {k: v for k, v in environment.items() if not k.startswith("GANYMEDE_")}
    return subprocess.run(
        [sys.executable, "-m", "ganymede", "grant", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment,
        timeout=60,
    )


def notebook(path: Path, wants: list[str] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"ganymede": {"host": {"wants": wants}}} if wants else {}
    body = {"cells": [], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(body))
    return path


def store_file() -> Path:
    return Path(os.environ["JUPYTER_DATA_DIR"]) / STORE_NAME


def test_grant_list_and_revoke_on_the_store_without_a_server(tmp_path: Path) -> None:
    notebook(tmp_path / "journal" / "index.ipynb", WANTS)
    done = ganymede_grant("journal/index.ipynb", "run=reports", "read=journal/", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "journal/index.ipynb\n"
        "  read       journal\n"
        "  run        reports\n"
        "  edit_self  true  (default)\n"
        "  wants      notebooks.run  (asked for, not granted)\n"
    )
    assert "reports" in store_file().read_text()
    more = ganymede_grant("journal/index.ipynb", "run=archive", "edit_self=false", cwd=tmp_path)
    assert more.returncode == 0, more.stderr
    listed = ganymede_grant("--list", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    overview = json.loads(listed.stdout)
    assert overview["defaults"] == {"read": [""], "run": [], "edit_self": True}
    [entry] = overview["notebooks"]
    assert entry["path"] == "journal/index.ipynb"
    assert entry["grant"] == {
        "read": ["journal"],
        "run": ["archive", "reports"],
        "edit_self": False,
    }
    assert entry["wants"] == WANTS

    revoked = ganymede_grant("--revoke", "journal/index.ipynb", "run=reports", "read", cwd=tmp_path)
    assert revoked.returncode == 0, revoked.stderr
    assert revoked.stdout.splitlines()[1:3] == [
        "  read       the whole root  (default)",
        "  run        archive",
    ]
    everything = ganymede_grant("--revoke", "--json", "journal/index.ipynb", cwd=tmp_path)
    assert json.loads(everything.stdout)["grant"] == {}
    assert ganymede_grant("--list", cwd=tmp_path).stdout == (
        "defaults\n  read       the whole root\n  run        nothing\n  edit_self  true\n"
    )


def test_the_defaults_come_from_the_roots_ganymede_toml(tmp_path: Path) -> None:
    (tmp_path / "ganymede.toml").write_text('[host]\nread = ["journal"]\nrun = ["reports"]\n')
    notebook(tmp_path / "nb.ipynb")
    done = ganymede_grant("--list", "nb.ipynb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:3] == [
        "  read       journal  (default)",
        "  run        reports  (default)",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "missing NOTEBOOK (or --list)"),
        (("nb.ipynb",), "missing KEY=PATH to grant"),
        (("nb.ipynb", "write=x"), "expected KEY=PATH with KEY one of read, run, edit_self"),
        (("nb.ipynb", "read"), "expected read=PATH"),
        (("nb.ipynb", "read=../up"), "'..' not allowed"),
        (("nb.ipynb", "read=/etc"), "absolute path not allowed"),
        (("nb.ipynb", "run=journal%2Fx.ipynb"), "encoded separators"),
        (("nb.ipynb", "edit_self=maybe"), "edit_self must be true or false"),
        (("--list", "--revoke", "nb.ipynb"), "--list and --revoke do not go together"),
        (("--list", "nb.ipynb", "read=x"), "--list takes at most one NOTEBOOK"),
        (("--revoke", "nb.ipynb", "run=never"), "run=never is not granted as such"),
        (("../outside.ipynb", "run=x"), "not under the current directory"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    root = tmp_path / "root"
    notebook(root / "nb.ipynb")
    notebook(tmp_path / "outside.ipynb")
    done = ganymede_grant(*args, cwd=root)
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("ganymede grant: error: ")
    assert message in done.stderr
    assert not store_file().exists()


def test_a_missing_notebook_exits_1(tmp_path: Path) -> None:
    done = ganymede_grant("nope.ipynb", "run=x", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == "ganymede grant: error: nope.ipynb: no such notebook\n"


def test_a_broken_grants_file_is_named_and_kept(tmp_path: Path) -> None:
    notebook(tmp_path / "nb.ipynb")
    store_file().write_text("[notebooks\n")
    done = ganymede_grant("nb.ipynb", "run=x", cwd=tmp_path)
    assert done.returncode == 2
    assert str(store_file()) in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert store_file().read_text() == "[notebooks\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    home = tmp_path_factory.mktemp("server")
    (home / "root").mkdir()
    running = start_server(home / "root", jupyter_env(home / "jupyter"))
    yield running
    stop_server(running)


@pytest.fixture
def server_env(server: RunningServer) -> dict[str, str]:
    """The server's own Jupyter dirs, so the CLI finds it in the runtime dir."""
    return jupyter_env(server.root.parent / "jupyter")


def test_through_a_running_server_the_change_is_visible_over_http_at_once(
    server: RunningServer, server_env: dict[str, str]
) -> None:
    notebook(server.root / "live" / "nb.ipynb", WANTS)
    done = ganymede_grant(
        "nb.ipynb", "run=reports", "--json", cwd=server.root / "live", env=server_env
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    answer = json.loads(done.stdout)
    assert answer["path"] == "live/nb.ipynb", "the server's API path, not the one typed"
    with server.client() as api:
        seen = api.get("api/host/grants", params={"path": "live/nb.ipynb"}).json()
        assert seen == answer
        assert seen["grant"] == {"run": ["reports"]}
        api.put("api/host/grants", params={"path": "live/nb.ipynb"}, json={"read": ["live"]})
    listed = ganymede_grant("--list", "--json", cwd=server.root, env=server_env)
    assert listed.returncode == 0, listed.stderr
    entries = {entry["path"]: entry for entry in json.loads(listed.stdout)["notebooks"]}
    assert entries["live/nb.ipynb"]["grant"] == {"read": ["live"]}


def test_url_and_token_name_a_server_known_by_url_alone(
    server: RunningServer, server_env: dict[str, str], tmp_path: Path
) -> None:
    notebook(server.root / "by-url" / "nb.ipynb")
    target = "by-url/nb.ipynb"  # its path under that server's root, which is not seen here
    elsewhere = dict(os.environ)  # the test's own runtime dir: no server found by itself
    done = ganymede_grant(
        str(target),
        "run=by-url",
        "--url",
        server.base,
        "--token",
        server.token,
        cwd=tmp_path,
        env=elsewhere,
    )
    assert done.returncode == 0, done.stderr
    with server.client() as api:
        seen = api.get("api/host/grants", params={"path": "by-url/nb.ipynb"}).json()
    assert seen["grant"] == {"run": ["by-url"]}
    wrong = ganymede_grant(
        target, "run=x", "--url", server.base, "--token", "wrong", cwd=tmp_path, env=elsewhere
    )
    assert wrong.returncode == 1
    assert "the server refused" in wrong.stderr


def test_a_server_that_does_not_answer_leaves_the_change_to_the_store(tmp_path: Path) -> None:
    root = tmp_path / "root"
    notebook(root / "nb.ipynb")
    with socket.socket() as bound_not_listening:
        bound_not_listening.bind(("127.0.0.1", 0))
        port = bound_not_listening.getsockname()[1]
        runtime = Path(os.environ["JUPYTER_RUNTIME_DIR"])
        info = {"url": f"http://127.0.0.1:{port}/", "token": "t", "root_dir": str(root)}
        (runtime / "jpserver-1.json").write_text(json.dumps(info | {"pid": os.getpid()}))
        done = ganymede_grant("nb.ipynb", "run=x", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "changing the grants store directly" in done.stderr
    assert "run = [" in store_file().read_text()
