"""Trusting a notebook through the server that serves it, so its open room holds the trust.

Signing the file alone is not enough while a room is open: the room's next save writes what it
holds, and without knowing the person trusted it, that save goes out unsigned. Jupyter's Trust
Notebook request (``POST /api/contents/{path}/trust``) reaches the room instead.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import httpx

from ganymede.errors import NotebookNotFound
from ganymede.serve.discover import ServerInfo
from ganymede.trust.notary import TrustReport

TIMEOUT = 60.0


class ServerUnreachable(Exception):
    """The server's runtime file is there but it does not answer: trust the file instead."""


def trust_through_server(server: ServerInfo, path: Path, shown_as: str) -> TrustReport:
    """Ask ``server`` to trust ``path`` (which it serves); NotebookNotFound if it has no such
    notebook, ServerUnreachable if it cannot be reached, httpx.HTTPStatusError otherwise."""
    api_path = server.api_path(path)
    assert api_path is not None, "the caller found this server by its root"
    url = f"{server.url.rstrip('/')}/api/contents/{urllib.parse.quote(api_path)}/trust"
    headers = {"Authorization": f"token {server.token}"} if server.token else {}
    try:
        answer = httpx.post(url, headers=headers, timeout=TIMEOUT)
    except httpx.TransportError as error:
        raise ServerUnreachable(f"{server.url}: {error}") from None
    if answer.status_code == httpx.codes.NOT_FOUND:
        raise NotebookNotFound(shown_as)
    answer.raise_for_status()
    return TrustReport(shown_as, trusted=True, signed_now=True)
