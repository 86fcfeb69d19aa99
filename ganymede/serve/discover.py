"""Finding the running server that serves a path, from jupyter_server's runtime files.

Every jupyter_server (``ganymede serve`` included) writes ``jpserver-<pid>.json`` in the Jupyter
runtime dir while it runs: its URL, token and root. A command that should act through the
server holding a notebook (so its live room sees the change) looks there. Light on purpose:
no jupyter_server import, so CLI commands stay quick to start.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from jupyter_core.paths import jupyter_runtime_dir


@dataclass(frozen=True)
class ServerInfo:
    """One running server: where to reach it, its token, and the directory it serves."""

    url: str
    token: str
    root: Path
    pid: int

    def api_path(self, path: Path) -> str | None:
        """``path`` as the contents API names it on this server; None if outside its root."""
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
    return max(serving, key=lambda server: len(server.root.parts), default=None)


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
