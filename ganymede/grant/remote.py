"""Grants through the running server that serves a notebook, so a change applies at once.

The same operations as ``GrantAdmin``, over ``/api/host/grants``; the server's refusals come
back as the errors ``GrantAdmin`` would have raised, so the CLI treats both alike.
"""

from __future__ import annotations

import httpx

from ganymede.client.discover import ServerInfo
from ganymede.client.http import api_url, auth_headers, unreachable
from ganymede.errors import (
    ConfigError,
    NotebookNotFound,
    ServerRefused,
    UsageError,
)
from ganymede.grant.admin import NotebookGrants, Overview
from ganymede.grant.model import NotebookGrant

TIMEOUT = 30.0
ENDPOINT = "api/host/grants"


class RemoteGrants:
    """``GrantAdmin``'s operations on the server ``server``; paths are its API paths."""

    def __init__(self, server: ServerInfo) -> None:
        self.server = server

    def show(self, api_path: str) -> NotebookGrants:
        return NotebookGrants.from_json(self._call("GET", api_path))

    def overview(self) -> Overview:
        return Overview.from_json(self._call("GET", None))

    def put(self, api_path: str, own: NotebookGrant) -> NotebookGrants:
        return NotebookGrants.from_json(self._call("PUT", api_path, own.to_json()))

    def delete(self, api_path: str) -> NotebookGrants:
        return NotebookGrants.from_json(self._call("DELETE", api_path))

    def _call(self, method: str, api_path: str | None, body: object = None) -> dict[str, object]:
        url = api_url(self.server, ENDPOINT)
        headers = auth_headers(self.server)
        params = {"path": api_path} if api_path is not None else {}
        try:
            answer = httpx.request(
                method, url, params=params, json=body, headers=headers, timeout=TIMEOUT
            )
        except httpx.TransportError as error:
            raise unreachable(self.server, error) from None
        if answer.is_success:
            return dict(answer.json())
        message = _message(answer)
        if answer.status_code == httpx.codes.NOT_FOUND:
            raise NotebookNotFound(api_path or "")
        if answer.status_code == httpx.codes.BAD_REQUEST:
            raise UsageError(message)
        if answer.status_code == httpx.codes.INTERNAL_SERVER_ERROR:
            raise ConfigError(message)
        refusal = f"{self.server.url}: the server refused: {message}"
        raise ServerRefused(answer.status_code, "refused", refusal)


def _message(answer: httpx.Response) -> str:
    try:
        return str(answer.json()["message"])
    except (ValueError, KeyError, TypeError):
        return f"{answer.status_code} {answer.reason_phrase}"
