"""Naming a server by URL: its runtime file, when there is one, still gives its root and token."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ganymede.client.discover import server_at


def runtime_file(runtime_dir: Path, root: Path, url: str, token: str) -> None:
    info = {"url": url, "token": token, "root_dir": str(root), "pid": os.getpid()}
    (runtime_dir / f"jpserver-{os.getpid()}.json").write_text(json.dumps(info))


def test_a_printed_url_finds_its_runtime_file_and_keeps_its_own_token(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    runtime_file(tmp_path, root, "http://127.0.0.1:8123/", "from-file")
    server = server_at("http://127.0.0.1:8123/lab?token=from-url", None, tmp_path)
    assert (server.url, server.token, server.root) == (
        "http://127.0.0.1:8123/",
        "from-url",
        root.resolve(),
    )
    assert server.api_path(root / "sub" / "nb.ipynb") == "sub/nb.ipynb"
    assert server.api_path(tmp_path / "elsewhere.ipynb") is None


def test_the_token_given_wins_and_the_file_fills_in_a_missing_one(tmp_path: Path) -> None:
    runtime_file(tmp_path, tmp_path, "http://127.0.0.1:8123/base/", "from-file")
    assert server_at("http://127.0.0.1:8123/base", None, tmp_path).token == "from-file"
    assert server_at("http://127.0.0.1:8123/base/lab", "given", tmp_path).token == "given"


def test_a_server_known_by_url_alone_takes_paths_relative_to_its_root(tmp_path: Path) -> None:
    server = server_at("http://10.0.0.9:9999/lab?token=t", None, tmp_path)
    assert (server.url, server.token, server.root, server.pid) == (
        "http://10.0.0.9:9999/",
        "t",
        None,
        None,
    )
    assert server.api_path(Path("./dir/nb.ipynb")) == "dir/nb.ipynb"
    assert server.api_path(Path("../nb.ipynb")) is None
    assert server.api_path(Path("/abs/nb.ipynb")) is None
