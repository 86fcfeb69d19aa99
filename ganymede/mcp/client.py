"""The agent API of a running server (``/api/agent/…``), from the agent's side.

One method per endpoint, nothing else of the server. Refusals come back as the errors the
server raised (``EditRefused`` with the cell as it is now and who changed it, ``UnknownMark``,
``NotebookNotFound``…), each carrying the server's own sentence, so a door can show it as is.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import httpx

from ganymede.client.discover import ServerInfo
from ganymede.client.http import api_url, auth_headers, unreachable
from ganymede.errors import (
    CellNotFound,
    EditRefused,
    GanymedeError,
    NotebookNotFound,
    ReadOnlyRoom,
    ServerRefused,
    UnknownMark,
    UnknownSession,
    UsageError,
)

# The watch long poll answers within 25 s; the rest answer at once, bar runs (``wait``).
TIMEOUT = 60.0
LONG_POLL_MARGIN = 35.0


class AgentClient:
    """The agent API of ``server``; use as ``async with AgentClient(server) as client``."""

    def __init__(self, server: ServerInfo, timeout: float = TIMEOUT) -> None:
        self.server = server
        self._http = httpx.AsyncClient(
            base_url=api_url(server, "api/agent/"), headers=auth_headers(server), timeout=timeout
        )

    async def __aenter__(self) -> AgentClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # Sessions

    async def open_session(self, agent: str) -> str:
        return str((await self._call("POST", "sessions", json={"agent": agent}))["session"])

    async def keep_alive(self, session: str) -> None:
        await self._call("POST", f"sessions/{session}", sent={"session": session})

    async def close_session(self, session: str) -> None:
        await self._call("DELETE", f"sessions/{session}", sent={"session": session})

    # Reading

    async def notebooks(self, directory: str = "") -> list[dict[str, Any]]:
        return list((await self._call("GET", "notebooks", params={"dir": directory}))["entries"])

    async def search(
        self,
        query: str,
        directory: str = "",
        outputs: bool = False,
        cell_type: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"query": query, "dir": directory, "outputs": str(outputs).lower()}
        if cell_type is not None:
            params["cell_type"] = cell_type
        if limit is not None:
            params["limit"] = limit
        return await self._call("GET", "search", params=params)

    async def results(self, path: str) -> dict[str, Any]:
        answer = await self._call("GET", "results", params={"path": path}, sent={"path": path})
        return dict(answer["results"])

    async def read(
        self, session: str, path: str | None = None, since: str | None = None, *, mark: bool = True
    ) -> dict[str, Any]:
        """``{"path", "notebook", "mark", "changes"}``; ``changes`` only with ``since``; with
        ``mark`` false the agent's mark stays where it was (and ``mark`` is None)."""
        body = _present(session=session, path=path, since=since)
        if not mark:
            body["mark"] = False
        return await self._call("POST", "read", json=body, sent=body)

    async def changed(self, agent: str) -> list[dict[str, Any]]:
        """Per notebook others changed since the agent's mark: path, mark, changes, line."""
        return list((await self._call("GET", "changed", params={"agent": agent}))["notebooks"])

    # Writing

    async def create(self, session: str, path: str, kernel: str | None = None) -> str:
        body = _present(session=session, path=path, kernel=kernel)
        return str((await self._call("POST", "create", json=body, sent=body))["path"])

    async def edit_cells(
        self,
        session: str,
        path: str,
        op: str,
        *,
        cell_id: str | None = None,
        source: str | None = None,
        cell_type: str | None = None,
        after: str | None = None,
        suggest: bool | None = None,
        title: str | None = None,
        description: str | None = None,
    ) -> dict[str, Any]:
        """One cell added, edited, deleted or moved; ``{"id", "index"?}``, or with ``suggest``
        ``{"suggestion"}``: the change waits in a fork for a person."""
        body = _present(
            session=session,
            path=path,
            op=op,
            id=cell_id,
            source=source,
            cell_type=cell_type,
            suggest=suggest,
            title=title,
            description=description,
        )
        if op in ("add", "move"):
            body["after"] = after  # null means the end (add) or the top (move)
        return await self._call("POST", "cells", json=body, sent=body)

    async def suggestions(self, path: str | None, agent: str | None) -> list[dict[str, Any]]:
        params = _present(path=path, agent=agent)
        return list((await self._call("GET", "suggestions", params=params))["suggestions"])

    async def decide(self, suggestion_id: str, action: str, by: str) -> dict[str, Any]:
        body = {"action": action, "by": by}
        answer = await self._call("POST", f"suggestions/{suggestion_id}", json=body, sent=body)
        return dict(answer["suggestion"])

    async def request_done(self, session: str, path: str, cell_id: str) -> None:
        body = {"session": session, "path": path, "id": cell_id}
        await self._call("POST", "request-done", json=body, sent=body)

    # Running

    async def run_cells(
        self, session: str, path: str, ids: list[str], wait: float
    ) -> dict[str, Any]:
        """``{"finished", "cells"}``: the cells with their outputs, once run or after ``wait``."""
        body = {"session": session, "path": path, "ids": ids, "wait": wait}
        return await self._call(
            "POST", "run", json=body, sent=body, timeout=wait + LONG_POLL_MARGIN
        )

    async def kernel(self, session: str, path: str, action: str) -> None:
        body = {"session": session, "path": path, "action": action}
        await self._call("POST", "kernel", json=body, sent=body)

    async def run_notebook(
        self,
        session: str,
        path: str,
        params: dict[str, Any] | None = None,
        save: bool | None = None,
    ) -> dict[str, Any]:
        body = _present(session=session, path=path, params=params, save=save)
        return await self._call("POST", "run-notebook", json=body, sent=body, timeout=None)

    # Watching

    async def watch(
        self,
        agent: str,
        every_change: bool,
        settle: float | None,
        cursor: int = 0,
        epoch: str | None = None,
        wait: float | None = None,
    ) -> dict[str, Any]:
        """One long poll: ``{"epoch", "cursor", "events"}``, the settled changes past ``cursor``
        (all the server's watcher has, when ``epoch`` is not the server's: it restarted);
        ``wait`` 0 answers at once."""
        params = _present(
            agent=agent,
            all=str(every_change).lower(),
            settle=settle,
            after=cursor,
            epoch=epoch,
            wait=wait,
        )
        return await self._call(
            "GET", "watch", params=params, timeout=(settle or 0) + LONG_POLL_MARGIN
        )

    async def _call(
        self,
        method: str,
        endpoint: str,
        *,
        params: dict[str, Any] | None = None,
        json: dict[str, Any] | None = None,
        sent: dict[str, Any] | None = None,
        timeout: float | None = TIMEOUT,
    ) -> dict[str, Any]:
        try:
            answer = await self._http.request(
                method, endpoint, params=params, json=json, timeout=timeout
            )
        except httpx.TransportError as error:
            raise unreachable(self.server, error) from None
        if answer.is_success:
            return dict(answer.json()) if answer.content else {}
        raise refusal(answer, sent or params or {})


def refusal(answer: httpx.Response, sent: dict[str, Any]) -> GanymedeError:
    """The error the server's refusal stands for; its ``str`` is the server's own message."""
    try:
        body = answer.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {"error": "", "message": answer.text.strip() or answer.reason_phrase}
    code = str(body.get("error", ""))
    message = str(body.get("message") or answer.reason_phrase)
    error: GanymedeError
    if code == "changed_since_read":
        cell = body.get("cell") if isinstance(body.get("cell"), dict) else {}
        error = EditRefused(cell, str(body.get("by") or "someone"), message)
    elif code == "unknown_session":
        error = UnknownSession(str(sent.get("session", "")))
    elif code == "unknown_mark":
        error = UnknownMark(str(sent.get("since", "")))
    elif code == "not_found":
        error = NotebookNotFound(str(sent.get("path", "")))
    elif code == "no_such_cell":
        error = CellNotFound(str(sent.get("id", "")))
    elif code == "read_only":
        error = ReadOnlyRoom(str(sent.get("path", "")))
    elif answer.status_code == HTTPStatus.BAD_REQUEST:
        error = UsageError(message)
    else:
        error = ServerRefused(answer.status_code, code, message)
    # The server's sentence wins over the one each class would make from its fields.
    error.args = (message,)
    return error


def _present(**fields: Any) -> dict[str, Any]:
    """The fields that were given (a JSON body or query without its nulls)."""
    return {key: value for key, value in fields.items() if value is not None}
