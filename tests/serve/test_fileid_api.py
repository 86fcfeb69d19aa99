"""``/api/fileid/…`` and the contents API keeping ids in step, on a real server."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest

from tests.serve.conftest import RunningServer


@pytest.fixture
def folder(server: RunningServer, request: pytest.FixtureRequest) -> str:
    """A directory of this test's own under the shared server's root, as an API path."""
    name = request.node.name.replace("[", "-").replace("]", "")
    (server.root / name).mkdir()
    return name


def notebook(server: RunningServer, api_path: str) -> Path:
    path = server.root / api_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n')
    return path


def index(api: httpx.Client, path: str) -> httpx.Response:
    return api.post("api/fileid/index", params={"path": path})


def test_index_answers_201_then_200_with_the_same_id(
    server: RunningServer, api: httpx.Client, folder: str
) -> None:
    notebook(server, f"{folder}/a.ipynb")
    first = index(api, f"{folder}/a.ipynb")
    assert first.status_code == 201
    assert first.json()["path"] == f"{folder}/a.ipynb"
    assert uuid.UUID(first.json()["id"]).version == 4
    again = index(api, f"/{folder}/a.ipynb")
    assert again.status_code == 200
    assert again.json() == first.json()


def test_id_and_path_look_ups(server: RunningServer, api: httpx.Client, folder: str) -> None:
    notebook(server, f"{folder}/b.ipynb")
    assert api.get("api/fileid/id", params={"path": f"{folder}/b.ipynb"}).status_code == 404
    file_id = index(api, f"{folder}/b.ipynb").json()["id"]
    by_path = api.get("api/fileid/id", params={"path": f"{folder}/b.ipynb"})
    assert by_path.status_code == 200
    assert by_path.json() == {"id": file_id, "path": f"{folder}/b.ipynb"}
    by_id = api.get("api/fileid/path", params={"id": file_id})
    assert by_id.status_code == 200
    assert by_id.json() == {"id": file_id, "path": f"{folder}/b.ipynb"}
    unknown = api.get("api/fileid/path", params={"id": str(uuid.uuid4())})
    assert unknown.status_code == 404
    assert "message" in unknown.json()


@pytest.mark.parametrize(
    ("endpoint", "method", "params", "status"),
    [
        ("index", "POST", {"path": "../outside.ipynb"}, 400),
        ("id", "GET", {"path": "a/../../outside.ipynb"}, 400),
        ("index", "POST", {"path": "missing.ipynb"}, 404),
        ("index", "POST", {}, 400),
        ("path", "GET", {}, 400),
    ],
)
def test_bad_requests_get_json_errors(
    api: httpx.Client, endpoint: str, method: str, params: dict[str, str], status: int
) -> None:
    answer = api.request(method, f"api/fileid/{endpoint}", params=params)
    assert answer.status_code == status
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.json()["message"]


def test_a_symlink_out_of_the_root_is_a_400(
    server: RunningServer, api: httpx.Client, folder: str, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.ipynb"
    outside.write_text("{}")
    (server.root / folder / "link.ipynb").symlink_to(outside)
    answer = index(api, f"{folder}/link.ipynb")
    assert answer.status_code == 400
    assert "outside the root" in answer.json()["message"]


def test_the_endpoints_need_the_token(server: RunningServer, folder: str) -> None:
    notebook(server, f"{folder}/c.ipynb")
    with server.client(authenticated=False) as anonymous:
        assert index(anonymous, f"{folder}/c.ipynb").status_code == 403
        assert anonymous.get("api/fileid/id", params={"path": "x"}).status_code == 403
        assert anonymous.get("api/fileid/path", params={"id": "x"}).status_code == 403


def test_a_rename_through_the_contents_api_moves_the_id(
    server: RunningServer, api: httpx.Client, folder: str
) -> None:
    notebook(server, f"{folder}/old.ipynb")
    file_id = index(api, f"{folder}/old.ipynb").json()["id"]
    renamed = api.patch(f"api/contents/{folder}/old.ipynb", json={"path": f"{folder}/new.ipynb"})
    assert renamed.status_code == 200
    assert (
        api.get("api/fileid/path", params={"id": file_id}).json()["path"] == f"{folder}/new.ipynb"
    )
    again = index(api, f"{folder}/new.ipynb")
    assert (again.status_code, again.json()["id"]) == (200, file_id)


def test_renaming_a_directory_moves_the_ids_under_it(
    server: RunningServer, api: httpx.Client, folder: str
) -> None:
    notebook(server, f"{folder}/journal/x.ipynb")
    notebook(server, f"{folder}/journal/deeper/y.ipynb")
    x_id = index(api, f"{folder}/journal/x.ipynb").json()["id"]
    y_id = index(api, f"{folder}/journal/deeper/y.ipynb").json()["id"]
    renamed = api.patch(f"api/contents/{folder}/journal", json={"path": f"{folder}/diary"})
    assert renamed.status_code == 200
    assert (
        api.get("api/fileid/path", params={"id": x_id}).json()["path"] == f"{folder}/diary/x.ipynb"
    )
    assert (
        api.get("api/fileid/path", params={"id": y_id}).json()["path"]
        == f"{folder}/diary/deeper/y.ipynb"
    )


def test_a_delete_through_the_contents_api_drops_the_id(
    server: RunningServer, api: httpx.Client, folder: str
) -> None:
    notebook(server, f"{folder}/gone.ipynb")
    file_id = index(api, f"{folder}/gone.ipynb").json()["id"]
    assert api.delete(f"api/contents/{folder}/gone.ipynb").status_code == 204
    assert api.get("api/fileid/path", params={"id": file_id}).status_code == 404
    notebook(server, f"{folder}/gone.ipynb")
    reborn = index(api, f"{folder}/gone.ipynb")
    assert reborn.status_code == 201
    assert reborn.json()["id"] != file_id


def test_a_failed_rename_keeps_the_id(
    server: RunningServer, api: httpx.Client, folder: str
) -> None:
    notebook(server, f"{folder}/keep.ipynb")
    notebook(server, f"{folder}/taken.ipynb")
    file_id = index(api, f"{folder}/keep.ipynb").json()["id"]
    refused = api.patch(f"api/contents/{folder}/keep.ipynb", json={"path": f"{folder}/taken.ipynb"})
    assert refused.status_code == 409
    assert (
        api.get("api/fileid/path", params={"id": file_id}).json()["path"] == f"{folder}/keep.ipynb"
    )


def test_a_file_moved_by_another_program_gets_a_new_id(
    server: RunningServer, api: httpx.Client, folder: str
) -> None:
    old = notebook(server, f"{folder}/here.ipynb")
    file_id = index(api, f"{folder}/here.ipynb").json()["id"]
    old.rename(server.root / folder / "there.ipynb")
    assert api.get("api/fileid/path", params={"id": file_id}).status_code == 404
    moved = index(api, f"{folder}/there.ipynb")
    assert moved.status_code == 201
    assert moved.json()["id"] != file_id


def test_the_contents_api_still_answers_hashes(
    server: RunningServer, api: httpx.Client, folder: str
) -> None:
    notebook(server, f"{folder}/hashed.ipynb")
    model = api.get(f"api/contents/{folder}/hashed.ipynb", params={"content": 0, "hash": 1})
    assert model.status_code == 200
    assert model.json()["hash"]
    assert model.json()["hash_algorithm"]
