"""``/api/agent/…``: the agent core over REST, for ``ganymede mcp`` and other agent hosts.

Every answer is JSON. A refusal is ``{"error": <code>, "message": <sentence>}``: 400
``bad_request`` (a malformed body or path), 404 ``unknown_session`` / ``unknown_mark`` /
``not_found`` / ``no_such_cell``, 409 ``changed_since_read`` (with ``cell`` as it is now and
``by``, who changed it), 409 ``read_only`` (another server owns the file), 409 ``exists``;
a failed notebook run answers 422 with the host API's code (``denied``, ``failed``, …).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from ganymede.core import Notebooks
from ganymede.errors import (
    CellNotFound,
    EditRefused,
    HostCallError,
    NotebookNotFound,
    PathError,
    ReadOnlyRoom,
    UnknownMark,
    UnknownSession,
    UsageError,
)
from ganymede.serve.agents import AGENTS_SETTINGS_KEY, LONG_POLL, Agents

AUTH_RESOURCE = "contents"

Answer = dict[str, Any] | list[Any] | None
DEFAULT_WAIT = 60.0


class AgentHandler(APIHandler):
    """Shared plumbing: the service, the JSON body, and errors as JSON refusals."""

    auth_resource = AUTH_RESOURCE

    @property
    def agents(self) -> Agents:
        return self.settings[AGENTS_SETTINGS_KEY]

    @property
    def notebooks(self) -> Notebooks:
        return self.agents.notebooks

    def body(self) -> dict[str, Any]:
        try:
            data = json.loads(self.request.body or b"{}")
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise UsageError(f"the body is not JSON: {error}") from None
        if not isinstance(data, dict):
            raise UsageError("the body must be a JSON object")
        return data

    async def answer(
        self, produce: Callable[[], Awaitable[Answer]], status: int = HTTPStatus.OK
    ) -> None:
        try:
            result = await produce()
        except EditRefused as error:
            return self.refuse(
                HTTPStatus.CONFLICT, "changed_since_read", str(error), cell=error.cell, by=error.by
            )
        except ReadOnlyRoom as error:
            return self.refuse(HTTPStatus.CONFLICT, "read_only", str(error))
        except (UsageError, PathError) as error:
            return self.refuse(HTTPStatus.BAD_REQUEST, "bad_request", str(error))
        except UnknownSession as error:
            return self.refuse(HTTPStatus.NOT_FOUND, "unknown_session", str(error))
        except UnknownMark as error:
            return self.refuse(HTTPStatus.NOT_FOUND, "unknown_mark", str(error))
        except CellNotFound as error:
            return self.refuse(HTTPStatus.NOT_FOUND, "no_such_cell", str(error))
        except NotebookNotFound as error:
            return self.refuse(HTTPStatus.NOT_FOUND, "not_found", str(error))
        except FileExistsError as error:
            return self.refuse(HTTPStatus.CONFLICT, "exists", str(error))
        except HostCallError as error:
            return self.refuse(HTTPStatus.UNPROCESSABLE_ENTITY, error.code, error.message)
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(result if result is not None else {}))

    def refuse(self, status: int, code: str, message: str, **extra: Any) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": code, "message": message, **extra}))

    def string(self, body: dict[str, Any], key: str, *, required: bool = True) -> str | None:
        value = body.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str):
            raise UsageError(f"{key} must be a string")
        return value


class SessionsHandler(AgentHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        async def open_session() -> Answer:
            agent = self.string(self.body(), "agent")
            assert agent is not None
            session = self.agents.open_session(agent)
            return {"session": session.id, "agent": session.agent}

        await self.answer(open_session, HTTPStatus.CREATED)


class SessionHandler(AgentHandler):
    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        async def keep_alive() -> Answer:
            session = self.agents.keep_alive(session_id)
            return {"session": session.id, "agent": session.agent}

        await self.answer(keep_alive)

    @web.authenticated
    @authorized
    async def delete(self, session_id: str) -> None:
        self.agents.close_session(session_id)
        self.set_status(HTTPStatus.NO_CONTENT)
        self.finish()


class ListHandler(AgentHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        async def listing() -> Answer:
            return {"entries": self.notebooks.list(self.get_argument("dir", ""))}

        await self.answer(listing)


class SearchHandler(AgentHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        async def search() -> Answer:
            limit = self.get_argument("limit", None)
            if limit is not None and not limit.isdigit():
                raise UsageError(f"limit must be a whole number, not {limit!r}")
            options: dict[str, Any] = {
                "dir": self.get_argument("dir", ""),
                "outputs": self.get_argument("outputs", "false").lower() in ("1", "true", "yes"),
                "cell_type": self.get_argument("cell_type", None),
            }
            if limit is not None:
                options["limit"] = int(limit)
            return self.notebooks.search(self.get_argument("query"), **options)

        await self.answer(search)


class ResultsHandler(AgentHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        async def results() -> Answer:
            return {"results": self.notebooks.results(self.get_argument("path"))}

        await self.answer(results)


class ReadHandler(AgentHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        async def read() -> Answer:
            body = self.body()
            return await self.agents.read(
                str(self.string(body, "session")),
                self.string(body, "path", required=False),
                self.string(body, "since", required=False),
            )

        await self.answer(read)


class CellsHandler(AgentHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        async def edit() -> Answer:
            body = self.body()
            return await self.agents.edit(
                str(self.string(body, "session")),
                str(self.string(body, "path")),
                str(self.string(body, "op")),
                cell_id=self.string(body, "id", required=False),
                source=self.string(body, "source", required=False),
                cell_type=self.string(body, "cell_type", required=False) or "code",
                after=self.string(body, "after", required=False),
            )

        await self.answer(edit)


class RequestDoneHandler(AgentHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        async def done() -> Answer:
            body = self.body()
            await self.agents.request_done(
                str(self.string(body, "session")),
                str(self.string(body, "path")),
                str(self.string(body, "id")),
            )
            return {}

        await self.answer(done)


class CreateHandler(AgentHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        async def create() -> Answer:
            body = self.body()
            return await self.agents.create(
                str(self.string(body, "session")),
                str(self.string(body, "path")),
                self.string(body, "kernel", required=False),
            )

        await self.answer(create, HTTPStatus.CREATED)


class RunHandler(AgentHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        async def run() -> Answer:
            body = self.body()
            wait = body.get("wait", DEFAULT_WAIT)
            if isinstance(wait, bool) or not isinstance(wait, int | float) or wait < 0:
                raise UsageError("wait must be a number of seconds, 0 or more")
            ids = body.get("ids")
            if not isinstance(ids, list):
                raise UsageError("ids must be a list of cell ids")
            return await self.agents.run(
                str(self.string(body, "session")), str(self.string(body, "path")), ids, wait
            )

        await self.answer(run)


class KernelHandler(AgentHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        async def act() -> Answer:
            body = self.body()
            await self.agents.kernel(
                str(self.string(body, "session")),
                str(self.string(body, "path")),
                str(self.string(body, "action")),
            )
            return {}

        await self.answer(act)


class RunNotebookHandler(AgentHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        async def run() -> Answer:
            body = self.body()
            return await self.agents.run_notebook(
                str(self.string(body, "session")),
                str(self.string(body, "path")),
                body.get("params"),
                body.get("save"),
            )

        await self.answer(run)


class WatchHandler(AgentHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        async def watch() -> Answer:
            settle = self.get_argument("settle", None)
            after = self.get_argument("after", "0")
            wait = self.get_argument("wait", str(LONG_POLL))
            try:
                settle_seconds = float(settle) if settle is not None else None
            except ValueError:
                raise UsageError(f"settle must be a number of seconds, not {settle!r}") from None
            if not after.isdigit():
                raise UsageError(f"after must be a cursor from an earlier answer, not {after!r}")
            try:
                wait_seconds = min(float(wait), LONG_POLL)
            except ValueError:
                raise UsageError(f"wait must be a number of seconds, not {wait!r}") from None
            return await self.agents.watch(
                self.get_argument("agent"),
                everything=self.get_argument("all", "false").lower() in ("1", "true", "yes"),
                settle=settle_seconds,
                epoch=self.get_argument("epoch", None),
                after=int(after),
                timeout=max(wait_seconds, 0.0),
            )

        await self.answer(watch)


class ChangedHandler(AgentHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        async def changed() -> Answer:
            return {"notebooks": self.agents.changed(self.get_argument("agent"))}

        await self.answer(changed)


default_handlers = [
    (r"/api/agent/sessions", SessionsHandler),
    (r"/api/agent/sessions/([0-9a-f]+)", SessionHandler),
    (r"/api/agent/notebooks", ListHandler),
    (r"/api/agent/search", SearchHandler),
    (r"/api/agent/results", ResultsHandler),
    (r"/api/agent/read", ReadHandler),
    (r"/api/agent/cells", CellsHandler),
    (r"/api/agent/request-done", RequestDoneHandler),
    (r"/api/agent/changed", ChangedHandler),
    (r"/api/agent/create", CreateHandler),
    (r"/api/agent/run", RunHandler),
    (r"/api/agent/kernel", KernelHandler),
    (r"/api/agent/run-notebook", RunNotebookHandler),
    (r"/api/agent/watch", WatchHandler),
]
