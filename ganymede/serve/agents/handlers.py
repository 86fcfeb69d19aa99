"""``/api/agent/…``: the agent core over REST, for ``ganymede mcp`` and other agent hosts.

Every answer is JSON. A refusal is ``{"error": <code>, "message": <sentence>}``: 400
``bad_request`` (a malformed body or path), 404 ``unknown_session`` / ``unknown_mark`` /
``not_found`` / ``no_such_cell``, 409 ``changed_since_read`` (with ``cell`` as it is now and
``by``, who changed it), 409 ``read_only`` (another server owns the file, or its mode forbids
writing it), 409 ``exists``;
a failed notebook run answers 422 with the host API's code (``denied``, ``failed``, …).

What the Authorizer is asked is what the endpoint does, whatever its HTTP method: sessions,
listing, search, results, changes, watching and reading need ``read`` on ``contents``; editing
cells, marking requests done and creating notebooks ``write`` on ``contents``; running cells,
restarting or interrupting kernels and running notebooks ``execute`` on ``kernels``.
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
    InvalidNotebook,
    NotebookNotFound,
    PathError,
    ReadOnlyRoom,
    UnknownMark,
    UnknownSession,
    UsageError,
)
from ganymede.serve.agents.manager import AGENTS_SETTINGS_KEY, Agents
from ganymede.serve.agents.suggestions import UnknownSuggestion
from ganymede.serve.agents.watch import LONG_POLL
from ganymede.serve.roles import CONTENTS, EXECUTE, KERNELS, READ, WRITE

Answer = dict[str, Any] | list[Any] | None
DEFAULT_WAIT = 60.0


class AgentHandler(APIHandler):
    """Shared plumbing: the service, the JSON body, and errors as JSON refusals."""

    auth_resource = CONTENTS

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
        except UnknownSuggestion as error:
            return self.refuse(HTTPStatus.NOT_FOUND, "unknown_suggestion", str(error))
        except NotebookNotFound as error:
            return self.refuse(HTTPStatus.NOT_FOUND, "not_found", str(error))
        except InvalidNotebook as error:  # a directory, unreadable or not nbformat
            return self.refuse(HTTPStatus.UNPROCESSABLE_ENTITY, "invalid_notebook", str(error))
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

    def flag(self, name: str) -> bool:
        return self.get_argument(name, "false").lower() in ("1", "true", "yes")

    def seconds(self, name: str, value: str) -> float:
        try:
            seconds = float(value)
        except ValueError:
            raise UsageError(f"{name} must be a number of seconds, not {value!r}") from None
        if seconds < 0:
            raise UsageError(f"{name} must be 0 or more seconds")
        return seconds

    def boolean(self, body: dict[str, Any], key: str) -> bool | None:
        value = body.get(key)
        if value is not None and not isinstance(value, bool):
            raise UsageError(f"{key} must be true or false")
        return value

    def string(self, body: dict[str, Any], key: str, *, required: bool = True) -> str | None:
        value = body.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str):
            raise UsageError(f"{key} must be a string")
        return value


class PostHandler(AgentHandler):
    """An endpoint that acts on a JSON body: subclasses say what ``act`` does with it, and
    derive from ``ReadingPost``, ``WritingPost`` or ``RunningPost`` for what that needs."""

    created = False

    async def act(self, body: dict[str, Any]) -> Answer:
        raise NotImplementedError

    async def act_and_answer(self) -> None:
        status = HTTPStatus.CREATED if self.created else HTTPStatus.OK
        await self.answer(lambda: self.act(self.body()), status)


class ReadingPost(PostHandler):
    @web.authenticated
    @authorized(READ, CONTENTS)
    async def post(self) -> None:
        await self.act_and_answer()


class WritingPost(PostHandler):
    @web.authenticated
    @authorized(WRITE, CONTENTS)
    async def post(self) -> None:
        await self.act_and_answer()


class RunningPost(PostHandler):
    auth_resource = KERNELS

    @web.authenticated
    @authorized(EXECUTE, KERNELS)
    async def post(self) -> None:
        await self.act_and_answer()


class QueryHandler(AgentHandler):
    """An endpoint that answers a query string: subclasses say what ``look`` returns."""

    async def look(self) -> Answer:
        raise NotImplementedError

    @web.authenticated
    @authorized(READ, CONTENTS)
    async def get(self) -> None:
        await self.answer(self.look)


class SessionsHandler(ReadingPost):
    created = True

    async def act(self, body: dict[str, Any]) -> Answer:
        session = self.agents.open_session(str(self.string(body, "agent")))
        return {"session": session.id, "agent": session.agent}


class SessionHandler(AgentHandler):
    @web.authenticated
    @authorized(READ, CONTENTS)
    async def post(self, session_id: str) -> None:
        async def keep_alive() -> Answer:
            session = self.agents.sessions.get(session_id)
            return {"session": session.id, "agent": session.agent}

        await self.answer(keep_alive)

    @web.authenticated
    @authorized(READ, CONTENTS)
    async def delete(self, session_id: str) -> None:
        self.agents.close_session(session_id)
        self.set_status(HTTPStatus.NO_CONTENT)
        self.finish()


class ListHandler(QueryHandler):
    async def look(self) -> Answer:
        return {"entries": self.notebooks.list(self.get_argument("dir", ""))}


class SearchHandler(QueryHandler):
    async def look(self) -> Answer:
        limit = self.get_argument("limit", None)
        if limit is not None and not limit.isdigit():
            raise UsageError(f"limit must be a whole number, not {limit!r}")
        options: dict[str, Any] = {
            "dir": self.get_argument("dir", ""),
            "outputs": self.flag("outputs"),
            "cell_type": self.get_argument("cell_type", None),
        }
        if limit is not None:
            options["limit"] = int(limit)
        return self.notebooks.search(self.get_argument("query"), **options)


class ResultsHandler(QueryHandler):
    async def look(self) -> Answer:
        return {"results": self.notebooks.results(self.get_argument("path"))}


class ChangedHandler(QueryHandler):
    async def look(self) -> Answer:
        return {"notebooks": await self.agents.changed(self.get_argument("agent"))}


class WatchHandler(QueryHandler):
    async def look(self) -> Answer:
        after = self.get_argument("after", "0")
        if not after.isdigit():
            raise UsageError(f"after must be a cursor from an earlier answer, not {after!r}")
        settle = self.get_argument("settle", None)
        return await self.agents.watchers.poll(
            self.get_argument("agent"),
            everything=self.flag("all"),
            settle=None if settle is None else self.seconds("settle", settle),
            epoch=self.get_argument("epoch", None),
            after=int(after),
            timeout=min(self.seconds("wait", self.get_argument("wait", str(LONG_POLL))), LONG_POLL),
        )


class ReadHandler(ReadingPost):
    async def act(self, body: dict[str, Any]) -> Answer:
        mark = body.get("mark", True)
        if not isinstance(mark, bool):
            raise UsageError("mark must be true or false")
        return await self.agents.read(
            str(self.string(body, "session")),
            self.string(body, "path", required=False),
            self.string(body, "since", required=False),
            mark=mark,
        )


class CellsHandler(WritingPost):
    async def act(self, body: dict[str, Any]) -> Answer:
        return await self.agents.edit(
            str(self.string(body, "session")),
            str(self.string(body, "path")),
            str(self.string(body, "op")),
            cell_id=self.string(body, "id", required=False),
            source=self.string(body, "source", required=False),
            cell_type=self.string(body, "cell_type", required=False) or "code",
            after=self.string(body, "after", required=False),
            suggest=self.boolean(body, "suggest"),
            title=self.string(body, "title", required=False) or "",
            description=self.string(body, "description", required=False) or "",
        )


class SuggestionsHandler(QueryHandler):
    async def look(self) -> Answer:
        return {
            "suggestions": self.agents.suggesting.listed(
                self.get_argument("path", None), self.get_argument("agent", None)
            )
        }


class SuggestionHandler(AgentHandler):
    """``POST {"action": "accept" | "reject", "by": NAME}``: the person's decision."""

    @web.authenticated
    @authorized(WRITE, CONTENTS)
    async def post(self, suggestion_id: str) -> None:
        async def decide() -> Answer:
            body = self.body()
            action = self.string(body, "action")
            if action not in ("accept", "reject"):
                raise UsageError(f"action must be accept or reject, not {action!r}")
            by = str(self.string(body, "by"))
            return await self.agents.suggesting.decide(suggestion_id, action == "accept", by)

        await self.answer(decide)


class RequestDoneHandler(WritingPost):
    async def act(self, body: dict[str, Any]) -> Answer:
        await self.agents.request_done(
            str(self.string(body, "session")),
            str(self.string(body, "path")),
            str(self.string(body, "id")),
        )
        return {}


class CreateHandler(WritingPost):
    created = True

    async def act(self, body: dict[str, Any]) -> Answer:
        return await self.agents.create(
            str(self.string(body, "session")),
            str(self.string(body, "path")),
            self.string(body, "kernel", required=False),
        )


class RunHandler(RunningPost):
    async def act(self, body: dict[str, Any]) -> Answer:
        wait = body.get("wait", DEFAULT_WAIT)
        if isinstance(wait, bool) or not isinstance(wait, int | float) or wait < 0:
            raise UsageError("wait must be a number of seconds, 0 or more")
        ids = body.get("ids")
        if not isinstance(ids, list):
            raise UsageError("ids must be a list of cell ids")
        return await self.agents.run(
            str(self.string(body, "session")), str(self.string(body, "path")), ids, wait
        )


class KernelHandler(RunningPost):
    async def act(self, body: dict[str, Any]) -> Answer:
        await self.agents.kernel(
            str(self.string(body, "session")),
            str(self.string(body, "path")),
            str(self.string(body, "action")),
        )
        return {}


class RunNotebookHandler(RunningPost):
    async def act(self, body: dict[str, Any]) -> Answer:
        return await self.agents.run_notebook(
            str(self.string(body, "session")),
            str(self.string(body, "path")),
            body.get("params"),
            body.get("save"),
        )


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
    (r"/api/agent/suggestions", SuggestionsHandler),
    (r"/api/agent/suggestions/([0-9a-f]+)", SuggestionHandler),
]
