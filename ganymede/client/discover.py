"""Finding the running server that serves a path, from jupyter_server's runtime files.

Every jupyter_server (``ganymede serve`` included) writes ``jpserver-<pid>.json`` in the Jupyter
runtime dir while it runs: its URL, token and root. A command that should act through the
server holding a notebook (so its live room sees the change) looks there, unless it is given the
server's URL (``--url`` / ``GANYMEDE_URL``): then the runtime file of that URL, if there is one
on this machine, still tells the root and token; a server known by URL alone is taken to name
notebooks as given, relative to its root. Light on purpose: no jupyter_server import, so CLI
commands stay quick to start.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from jupyter_core.paths import jupyter_runtime_dir

MASKED_TOKEN = "..."  # what a server prints for a token handed to it: not the token


@dataclass(frozen=True)
class ServerInfo:
    """One running server: where to reach it, its token, and the directory it serves (None:
    a server known by URL alone, whose root this machine cannot see)."""

    url: str
    token: str
    root: Path | None
    pid: int | None

    def api_path(self, path: Path) -> str | None:
        """``path`` as the contents API names it on this server; None if outside its root."""
        if self.root is None:
            return _as_api_path(path)
        try:
            relative = path.resolve().relative_to(self.root)
        except ValueError:
            return None
        return str(PurePosixPath(*relative.parts))


def running_servers(runtime_dir: Path | None = None) -> list[ServerInfo]:
    """Servers whose runtime file names a live process, newest file first."""
    folder = runtime_dir if runtime_dir is not None else Path(jupyter_runtime_dir())
    files = sorted(folder.glob("jpserver-*.json"), key=_modified, reverse=True)
    servers = []
    for file in files:
        info = _read(file)
        if info is not None and _alive(info.pid):
            servers.append(info)
    return servers


def server_for(path: Path, runtime_dir: Path | None = None) -> ServerInfo | None:
    """The running server whose root holds ``path`` (the deepest root when several do)."""
    serving = [server for server in running_servers(runtime_dir) if server.api_path(path)]
    return max(
        serving, key=lambda server: len(server.root.parts if server.root else ()), default=None
    )


def server_at(url: str, token: str | None, runtime_dir: Path | None = None) -> ServerInfo:
    """The server at ``url`` (as ``ganymede serve`` prints it, token query included, or its base
    URL); the token given wins over the one in the URL (unless masked, ``token=...``), which
    wins over its runtime file's."""
    parts = urllib.parse.urlsplit(url)
    in_query = urllib.parse.parse_qs(parts.query).get("token", [""])[0]
    if in_query == MASKED_TOKEN:
        in_query = ""  # the server printed it masked: its runtime file has it
    base = _base_url(url)
    chosen = token or in_query
    for server in running_servers(runtime_dir):
        if _base_url(server.url) == base:
            return replace(server, token=chosen or server.token)
    return ServerInfo(url=base, token=chosen, root=None, pid=None)


def _base_url(url: str) -> str:
    """``scheme://host:port/base/``: the page (``/lab``) and query of a printed URL left out."""
    parts = urllib.parse.urlsplit(url.strip())
    path = parts.path.rstrip("/")
    if path.endswith("/lab") or path == "lab":
        path = path[: -len("lab")]
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path.rstrip("/") + "/", "", ""))


def _as_api_path(path: Path) -> str | None:
    """A relative path that stays inside the root, as the contents API spells it; else None."""
    parts = [part for part in path.parts if part != "."]
    if path.is_absolute() or ".." in parts or not parts:
        return None
    return str(PurePosixPath(*parts))


def _read(file: Path) -> ServerInfo | None:
    try:
        raw = json.loads(file.read_text())
        return ServerInfo(
            url=str(raw["url"]),
            token=str(raw.get("token", "")),
            root=Path(raw["root_dir"]).resolve(),
            pid=int(raw["pid"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None  # half-written or foreign: not a server to talk to


def _modified(file: Path) -> float:
    try:
        return file.stat().st_mtime
    except OSError:
        return 0.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, alive
    return True
