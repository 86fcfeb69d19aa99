"""Calling a running server's HTTP API: where an endpoint is, the token, a server that is gone.

What every client of the server (trust, grants, the agent API) needs the same way; each keeps
its own reading of the server's refusals, since each maps them onto its own errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ganymede.client.discover import ServerInfo
from ganymede.errors import ServerUnreachable

if TYPE_CHECKING:
    import httpx


def api_url(server: ServerInfo, endpoint: str) -> str:
    """``endpoint`` (``api/…``, no leading slash) under the server's base URL."""
    return f"{server.url.rstrip('/')}/{endpoint}"


def auth_headers(server: ServerInfo) -> dict[str, str]:
    """The ``Authorization`` header of the server's token; none for a server without one."""
    return {"Authorization": f"token {server.token}"} if server.token else {}


def unreachable(server: ServerInfo, error: httpx.TransportError) -> ServerUnreachable:
    """The error for a request to ``server`` that got no answer (refused, timed out, reset)."""
    return ServerUnreachable(server.url, str(error) or type(error).__name__)
