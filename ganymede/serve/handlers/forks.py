"""jupyter-collaboration's fork, timeline and undo_redo endpoints, over ``rooms.forks`` and
``rooms.timeline``; bodies and replies as jupyter-collaboration's, which JupyterLab's slider and
fork manager read.

- ``PUT /api/collaboration/fork/{root_roomid}`` ``{"synchronize", "title", "description"}`` →
  201 ``{"sessionId", "fork_roomid", "fork_info"}``; ``GET`` → the root's forks by id;
  ``DELETE /api/collaboration/fork/{fork_roomid}[?merge=true]`` → 200; on an agent's
  suggestion's fork, the person's accepting (merge) or rejecting it.
- ``GET /api/collaboration/timeline/{path}?format=&type=`` → ``{"roomId", "timestamps",
  "forkRoom", "sessionId"}``.
- ``PUT /api/collaboration/undo_redo/{roomid}?action=undo|redo|restore&steps=&forkRoom=`` →
  ``{"status": "undone" | "redone"}``, ``{"code": 200, "status": "Document restored
  successfully"}``, or ``{"error": "No more undo operations available"}``.

Errors are JSON ``{"code", "error"}``: 404 for an unknown room, fork or file, 400 for a bad
request, 409 for a merge or restore into a read-only room.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from ganymede.agent import Author
from ganymede.errors import (
    InvalidNotebook,
    NotebookNotFound,
    PathError,
    ReadOnlyRoom,
    UsageError,
)
from ganymede.serve.context import SETTINGS_KEY, GanymedeContext
from ganymede.serve.identity import login_name
from ganymede.serve.roles import CONTENTS, READ, WRITE
from ganymede.serve.rooms.document import DocumentKind
from ganymede.serve.rooms.forks import Forks, UnknownFork
from ganymede.serve.rooms.handlers import room_manager
from ganymede.serve.rooms.room import DocumentRoom
from ganymede.serve.rooms.timeline import Timelines

FORKS_SETTINGS_KEY = "ganymede_forks"
TIMELINES_SETTINGS_KEY = "ganymede_timelines"
RESTORED = "Document restored successfully"


class CollaborationHandler(APIHandler):
    @property
    def forks(self) -> Forks:
        forks: Forks = self.settings[FORKS_SETTINGS_KEY]
        return forks

    @property
    def timelines(self) -> Timelines:
        timelines: Timelines = self.settings[TIMELINES_SETTINGS_KEY]
        return timelines

    @property
    def username(self) -> str:
        return login_name(self.current_user) or ""

    def author_in(self, room: DocumentRoom) -> Author:
        return room.person(login_name(self.current_user))

    def answer(self, body: Any, status: int = HTTPStatus.OK) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body))

    def refuse(self, status: int, error: str) -> None:
        self.answer({"code": int(status), "error": error}, status)

    def refuse_error(self, error: Exception) -> None:
        """The one place this door turns errors into statuses."""
        if isinstance(error, ReadOnlyRoom):
            self.refuse(HTTPStatus.CONFLICT, str(error))
        elif isinstance(error, UnknownFork | NotebookNotFound):
            self.refuse(HTTPStatus.NOT_FOUND, str(error))
        elif isinstance(error, UsageError | InvalidNotebook | PathError | UnicodeDecodeError):
            self.refuse(HTTPStatus.BAD_REQUEST, str(error))
        else:  # pragma: no cover - callers pass only the errors above
            raise error


REFUSED = (ReadOnlyRoom, UnknownFork, NotebookNotFound, UsageError, InvalidNotebook, PathError)


class ForkHandler(CollaborationHandler):
    @web.authenticated
    @authorized(READ, CONTENTS)
    async def get(self, root_roomid: str) -> None:
        forks = self.forks.of(root_roomid)
        self.answer({roomid: info.as_json() for roomid, info in forks.items()})

    @web.authenticated
    @authorized(WRITE, CONTENTS)
    async def put(self, root_roomid: str) -> None:
        try:
            body = json.loads(self.request.body or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError):
            return self.refuse(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
        if not isinstance(body, dict):
            return self.refuse(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
        synchronize, title = body.get("synchronize", False), body.get("title", "")
        description = body.get("description", "")
        if not isinstance(synchronize, bool):
            return self.refuse(HTTPStatus.BAD_REQUEST, "synchronize must be true or false")
        if not isinstance(title, str) or not isinstance(description, str):
            return self.refuse(HTTPStatus.BAD_REQUEST, "title and description must be strings")
        try:
            fork = await self.forks.create(
                root_roomid,
                synchronize=synchronize,
                title=title,
                description=description,
                username=self.username,
            )
        except (*REFUSED, UnicodeDecodeError) as error:
            return self.refuse_error(error)
        session_id = room_manager(self.settings).session_id
        reply = {"sessionId": session_id, "fork_roomid": fork.roomid}
        self.answer(reply | {"fork_info": fork.info.as_json()}, HTTPStatus.CREATED)

    @web.authenticated
    @authorized(WRITE, CONTENTS)
    async def delete(self, fork_roomid: str) -> None:
        merge = self.get_query_argument("merge", "false") == "true"
        try:
            author = self.author_in(self.forks.get(fork_roomid).root)
            await self.forks.decide(fork_roomid, merge=merge, author=author, username=self.username)
        except REFUSED as error:
            return self.refuse_error(error)
        self.set_status(HTTPStatus.OK)
        self.finish()


class TimelineHandler(CollaborationHandler):
    @web.authenticated
    @authorized(READ, CONTENTS)
    async def get(self, path: str) -> None:
        context: GanymedeContext = self.settings[SETTINGS_KEY]
        try:
            format_ = self.get_query_argument("format", None)
            kind = DocumentKind.of(format_, self.get_query_argument("type", None))
            file_id = context.file_ids.get_id(path)
            if file_id is None:
                raise NotebookNotFound(path)
            timeline = await self.timelines.open(f"{kind.format}:{kind.type}:{file_id}", file_id)
        except (*REFUSED, UnicodeDecodeError) as error:
            return self.refuse_error(error)
        self.answer(timeline)


class UndoRedoHandler(CollaborationHandler):
    @web.authenticated
    @authorized(WRITE, CONTENTS)
    async def put(self, roomid: str) -> None:
        action = self.get_query_argument("action", "")
        fork_roomid = self.get_query_argument("forkRoom", "")
        try:
            steps = int(self.get_query_argument("steps", "0"))
        except ValueError:
            return self.refuse(HTTPStatus.BAD_REQUEST, "steps must be a whole number")
        if steps < 0:
            return self.refuse(HTTPStatus.BAD_REQUEST, "steps must not be negative")
        try:
            if action == "restore":
                login = login_name(self.current_user)
                await self.timelines.restore(roomid, fork_roomid, login)
                return self.answer({"code": 200, "status": RESTORED})
            if action in ("undo", "redo"):
                moved = await self.timelines.move(fork_roomid, action, steps)
                if moved:
                    return self.answer({"status": "undone" if action == "undo" else "redone"})
                return self.answer({"error": f"No more {action} operations available"})
        except REFUSED as error:
            return self.refuse_error(error)
        self.refuse(HTTPStatus.BAD_REQUEST, "action must be undo, redo or restore")


default_handlers = [
    (r"/api/collaboration/fork/([^/]+)", ForkHandler),
    (r"/api/collaboration/timeline/(.+)", TimelineHandler),
    (r"/api/collaboration/undo_redo/([^/]+)", UndoRedoHandler),
]
