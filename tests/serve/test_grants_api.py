"""``/api/host/grants`` on a real server whose ganymede.toml narrows the ``[host]`` defaults."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ganymede.grant import STORE_NAME, GrantStore, NotebookGrant, StoredGrant
from tests.serve.conftest import RunningServer, jupyter_env, start_server, stop_server

WANTS = ["notebooks.run"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    home = tmp_path_factory.mktemp("grants")
    root = home / "root"
    root.mkdir()
    (root / "ganymede.toml").write_text('[host]\nread = ["journal"]\nrun = []\n')
    running = start_server(root, jupyter_env(home / "jupyter"))
    yield running
    stop_server(running)


@pytest.fixture
def store_file(server: RunningServer) -> Path:
    return server.root.parent / "jupyter" / "data" / STORE_NAME


def notebook(server: RunningServer, api_path: str, wants: list[str] | None = None) -> str:
    path = server.root / api_path
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"ganymede": {"host": {"wants": wants}}} if wants else {}
    body = {"cells": [], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(body))
    return api_path


def grants_of(api: httpx.Client, path: str) -> dict[str, object]:
    answer = api.get("api/host/grants", params={"path": path})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_a_notebook_without_a_grant_follows_the_defaults_and_shows_its_wants(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook(server, "plain/asks.ipynb", WANTS)
    assert grants_of(api, path) == {
        "path": path,
        "id": None,
        "grant": {},
        "effective": {"read": ["journal"], "run": [], "edit_self": True},
        "wants": WANTS,
    }
    every = api.get("api/host/grants").json()
    assert every["defaults"] == {"read": ["journal"], "run": [], "edit_self": True}
    assert path not in [entry["path"] for entry in every["notebooks"]], "wants grant nothing"


def test_put_sets_keys_that_replace_the_defaults_and_the_grant_follows_a_rename(
    server: RunningServer, api: httpx.Client, store_file: Path
) -> None:
    path = notebook(server, "put/index.ipynb", WANTS)
    body = {"run": ["/journal/2026/"[1:], "reports"], "edit_self": False}
    answer = api.put("api/host/grants", params={"path": path}, json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["grant"] == {"run": ["journal/2026", "reports"], "edit_self": False}
    assert answer.json()["effective"] == {
        "read": ["journal"],
        "run": ["journal/2026", "reports"],
        "edit_self": False,
    }
    file_id = answer.json()["id"]
    stored = GrantStore(store_file).all()[file_id]
    assert stored == StoredGrant(
        NotebookGrant(run=("journal/2026", "reports"), edit_self=False), path
    )
    listed = {entry["path"]: entry for entry in api.get("api/host/grants").json()["notebooks"]}
    assert listed[path] == answer.json()

    moved = api.patch(f"api/contents/{path}", json={"path": "put/moved.ipynb"})
    assert moved.status_code == 200, moved.text
    assert grants_of(api, "put/moved.ipynb")["grant"] == answer.json()["grant"]


def test_delete_drops_one_key_or_the_whole_grant(server: RunningServer, api: httpx.Client) -> None:
    path = notebook(server, "delete/nb.ipynb")
    body = {"read": [""], "run": ["reports"]}
    assert api.put("api/host/grants", params={"path": path}, json=body).status_code == 200
    one_key = api.delete("api/host/grants", params={"path": path, "key": "run"})
    assert one_key.status_code == 200, one_key.text
    assert one_key.json()["grant"] == {"read": [""]}
    assert one_key.json()["effective"]["run"] == []
    everything = api.delete("api/host/grants", params={"path": path})
    assert everything.status_code == 200
    assert grants_of(api, path)["grant"] == {}
    assert grants_of(api, path)["effective"]["read"] == ["journal"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "body is not JSON"),
        (b"[]", "must be an object"),
        (b'{"write": []}', "unknown key 'write'"),
        (b'{"read": "journal"}', "read must be a list of paths"),
        (b'{"read": ["../up"]}', "'..' not allowed"),
        (b'{"read": ["/etc"]}', "absolute path not allowed"),
        (b'{"run": ["journal%2Fx.ipynb"]}', "encoded separators"),
        (b'{"edit_self": "no"}', "edit_self must be true or false"),
    ],
)
def test_a_bad_body_is_a_400_that_says_why(
    server: RunningServer, api: httpx.Client, body: bytes, message: str
) -> None:
    path = notebook(server, "bad/nb.ipynb")
    answer = api.put("api/host/grants", params={"path": path}, content=body)
    assert answer.status_code == 400
    assert message in answer.json()["message"]
    assert grants_of(api, path)["grant"] == {}


def test_bad_paths_keys_and_unknown_notebooks(server: RunningServer, api: httpx.Client) -> None:
    assert api.get("api/host/grants", params={"path": "no/such.ipynb"}).status_code == 404
    assert api.put("api/host/grants", params={"path": "nope.ipynb"}, json={}).status_code == 404
    assert api.get("api/host/grants", params={"path": "../x.ipynb"}).status_code == 400
    assert api.get("api/host/grants", params={"path": "a%2Fb.ipynb"}).status_code == 400
    path = notebook(server, "keys/nb.ipynb")
    bad_key = api.delete("api/host/grants", params={"path": path, "key": "write"})
    assert bad_key.status_code == 400
    assert "unknown grant key 'write'" in bad_key.json()["message"]


def test_without_a_token_nothing_is_read_or_changed(
    server: RunningServer, api: httpx.Client
) -> None:
    path = notebook(server, "auth/nb.ipynb")
    with server.client(authenticated=False) as anonymous:
        assert anonymous.get("api/host/grants").status_code == 403
        put = anonymous.put("api/host/grants", params={"path": path}, json={"run": [""]})
        assert put.status_code == 403
    assert grants_of(api, path)["grant"] == {}


def test_a_broken_grants_file_is_a_500_naming_it_and_is_kept(
    server: RunningServer, api: httpx.Client, store_file: Path
) -> None:
    path = notebook(server, "broken/nb.ipynb")
    before = store_file.read_bytes() if store_file.exists() else None
    store_file.write_text("[notebooks\n")
    try:
        answer = api.put("api/host/grants", params={"path": path}, json={"run": ["x"]})
        assert answer.status_code == 500
        assert STORE_NAME in answer.json()["message"]
        assert store_file.read_text() == "[notebooks\n"
    finally:
        if before is None:
            store_file.unlink()
        else:
            store_file.write_bytes(before)
