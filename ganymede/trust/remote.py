"""Trusting a notebook through the server that serves it, so its open room holds the trust.

Signing the file alone is not enough while a room is open: the room's next save writes what it
holds, and without knowing the person trusted it, that save goes out unsigned. Jupyter's Trust
Notebook request (``POST /api/contents/{path}/trust``) reaches the room instead.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import httpx

from ganymede.client.discover import ServerInfo
from ganymede.client.http import api_url, auth_headers, unreachable
from ganymede.errors import NotebookNotFound, ServerRefused
from ganymede.trust.notary import TrustReport

TIMEOUT = 60.0


def trust_through_server(server: ServerInfo, path: Path, shown_as: str) -> TrustReport:
    """Ask ``server`` to trust ``path``; NotebookNotFound if it has no such notebook (or the
    path is not under its root), ServerUnreachable if it cannot be reached, ServerRefused
    for any other answer than success (its message is the server's reason: a read-only room
    names the server that owns the file)."""
    api_path = server.api_path(path)
    if api_path is None:
        raise NotebookNotFound(shown_as)
    url = api_url(server, f"api/contents/{urllib.parse.quote(api_path)}/trust")
    try:
        answer = httpx.post(url, headers=auth_headers(server), timeout=TIMEOUT)
    except httpx.TransportError as error:
        raise unreachable(server, error) from None
    if answer.status_code == httpx.codes.NOT_FOUND:
        raise NotebookNotFound(shown_as)
    if answer.is_error:
        raise ServerRefused(answer.status_code, "refused", _status(answer))
    return TrustReport(shown_as, trusted=True, signed_now=True)


def _status(answer: httpx.Response) -> str:
    """The status line, whose reason phrase is all an HTML error page tells a program, and
    the ``message`` of a JSON error body."""
    line = f"{answer.status_code} {answer.reason_phrase}"
    try:
        message = answer.json().get("message")
    except (ValueError, AttributeError):
        message = None
    return f"{line}: {message}" if message else line
