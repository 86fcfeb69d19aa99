"""``/api/fileid/…``: file ids over REST, as jupyter-server-fileid has them.

``POST /api/fileid/index?path=`` answers ``{"id","path"}`` with 201 when the file was indexed
now and 200 when it already had an id (as the collaboration session request does);
``GET /api/fileid/id?path=`` and ``GET /api/fileid/path?id=`` answer 404 when there is no such
id or file. A path that leaves the root is a 400; every error body is JSON. All three need
``read`` on ``contents``: an id names a file, indexing one changes nothing in it.
"""

from __future__ import annotations

import json
from http import HTTPStatus

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from ganymede.core.paths import normalize_api_path
from ganymede.errors import NotebookNotFound, PathError
from ganymede.fileid import FileIdStore
from ganymede.serve.context import SETTINGS_KEY, GanymedeContext
from ganymede.serve.roles import CONTENTS, READ


class FileIdHandler(APIHandler):
    """Shared plumbing: the store, and JSON answers for success and refusal."""

    auth_resource = CONTENTS

    @property
    def file_ids(self) -> FileIdStore:
        context: GanymedeContext = self.settings[SETTINGS_KEY]
        return context.file_ids

    def answer(self, file_id: str, path: str, status: int = HTTPStatus.OK) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"id": file_id, "path": path}))

    def refuse(self, status: int, message: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"message": message, "reason": HTTPStatus(status).phrase}))


class IndexHandler(FileIdHandler):
    @web.authenticated
    @authorized(READ, CONTENTS)
    def post(self) -> None:
        path = self.get_argument("path")
        try:
            known = self.file_ids.get_id(path)
            file_id = known or self.file_ids.index(path)
        except PathError as error:
            return self.refuse(HTTPStatus.BAD_REQUEST, str(error))
        except NotebookNotFound as error:
            return self.refuse(HTTPStatus.NOT_FOUND, str(error))
        status = HTTPStatus.OK if known else HTTPStatus.CREATED
        self.answer(file_id, normalize_api_path(path), status)


class IdHandler(FileIdHandler):
    @web.authenticated
    @authorized(READ, CONTENTS)
    def get(self) -> None:
        path = self.get_argument("path")
        try:
            file_id = self.file_ids.get_id(path)
        except PathError as error:
            return self.refuse(HTTPStatus.BAD_REQUEST, str(error))
        if file_id is None:
            return self.refuse(HTTPStatus.NOT_FOUND, f"{path}: no file id (index it first)")
        self.answer(file_id, normalize_api_path(path))


class PathHandler(FileIdHandler):
    @web.authenticated
    @authorized(READ, CONTENTS)
    def get(self) -> None:
        file_id = self.get_argument("id")
        path = self.file_ids.get_path(file_id)
        if path is None:
            return self.refuse(HTTPStatus.NOT_FOUND, f"{file_id}: no file with this id")
        self.answer(file_id, path)


default_handlers = [
    (r"/api/fileid/index", IndexHandler),
    (r"/api/fileid/id", IdHandler),
    (r"/api/fileid/path", PathHandler),
]
