"""The agent API answers a path that is no notebook it can read with a clear refusal, never a
server error: a directory, a file that is not JSON."""

from __future__ import annotations

import httpx
import pytest

from tests.serve.conftest import RunningServer

pytestmark = pytest.mark.slow


def test_a_directory_or_a_broken_file_is_refused_as_no_notebook(
    server: RunningServer, api: httpx.Client
) -> None:
    (server.root / "folder.ipynb").mkdir()
    (server.root / "broken.ipynb").write_text("{not json")
    session = api.post("api/agent/sessions", json={"agent": "invalid-test"}).json()["session"]
    for path in ("folder.ipynb", "broken.ipynb"):
        results = api.get("api/agent/results", params={"path": path})
        read = api.post("api/agent/read", json={"session": session, "path": path})
        assert results.status_code == 422, results.text
        assert results.json()["error"] == "invalid_notebook"
        assert path in results.json()["message"]
        assert read.status_code in (404, 422), read.text
        assert read.json()["error"] in ("not_found", "invalid_notebook")
