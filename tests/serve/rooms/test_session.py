"""``PUT /api/collaboration/session/{path}`` against a real server."""

from __future__ import annotations

import uuid

import httpx

from tests.serve.conftest import RunningServer
from tests.serve.rooms.conftest import notebook_bytes, put_session, write


def test_a_session_names_the_file_id_201_when_new_then_200(
    server: RunningServer, api: httpx.Client
) -> None:
    write(server.root / "sessions" / "first one.ipynb", notebook_bytes("1"))
    first = put_session(api, "sessions/first one.ipynb")
    assert first.status_code == 201, first.text
    again = put_session(api, "sessions/first one.ipynb")
    assert again.status_code == 200
    assert again.json() == first.json()
    reply = first.json()
    assert (reply["format"], reply["type"]) == ("json", "notebook")
    assert uuid.UUID(reply["sessionId"]).version == 4
    assert api.get("api/fileid/path", params={"id": reply["fileId"]}).json()["path"] == (
        "sessions/first one.ipynb"
    )


def test_every_file_shares_the_servers_one_session_id(
    server: RunningServer, api: httpx.Client
) -> None:
    write(server.root / "sessions" / "a.py", b"a = 1\n")
    write(server.root / "sessions" / "b.ipynb", notebook_bytes())
    text = put_session(api, "sessions/a.py", {"format": "text", "type": "file"}).json()
    notebook = put_session(api, "sessions/b.ipynb").json()
    assert (text["format"], text["type"]) == ("text", "file")
    assert text["sessionId"] == notebook["sessionId"]
    assert text["fileId"] != notebook["fileId"]


def test_a_missing_file_is_404(api: httpx.Client) -> None:
    answer = put_session(api, "sessions/nowhere.ipynb")
    assert answer.status_code == 404
    assert "nowhere.ipynb" in answer.json()["message"]


def test_bad_bodies_are_400(server: RunningServer, api: httpx.Client) -> None:
    write(server.root / "sessions" / "c.ipynb", notebook_bytes())
    for body in ({"format": "json"}, {"format": "base64", "type": "file"}, ["json", "notebook"]):
        answer = put_session(api, "sessions/c.ipynb", body)
        assert answer.status_code == 400, body
        assert answer.json()["message"]
    assert put_session(api, "sessions/c.ipynb", raw_body=b"{not json").status_code == 400
    assert put_session(api, "sessions/c.ipynb", raw_body=b"").status_code == 400


def test_paths_that_leave_the_root_or_name_a_directory_are_400(
    server: RunningServer, api: httpx.Client
) -> None:
    (server.root / "sessions").mkdir(exist_ok=True)
    (server.root / "sessions" / "outside.ipynb").symlink_to(server.root.parent / "x.ipynb")
    write(server.root.parent / "x.ipynb", notebook_bytes())
    for path in ("../x.ipynb", "sessions/../../x.ipynb", "sessions/outside.ipynb", "sessions"):
        answer = put_session(api, path)
        assert answer.status_code == 400, path


def test_a_session_needs_the_token(server: RunningServer) -> None:
    write(server.root / "sessions" / "d.ipynb", notebook_bytes())
    with server.client(authenticated=False) as anonymous:
        assert put_session(anonymous, "sessions/d.ipynb").status_code == 403
