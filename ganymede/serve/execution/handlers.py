"""``POST /api/kernels/{kernel_id}/execute``: parse, submit, answer.

Answers: ``200 null`` once queued; with ``wait``, ``{"finished", "cells"}`` once the batch ran
or the time is up; in JupyterLab's form, ``200 {"status": "ok"}`` when the cell ran and ``422``
with its error when it raised (``CellNotRun`` when a cell sent with it raised first).
Refusals: 400 (bad body, kernel not running, not a notebook), 404 (kernel, document or cell
unknown), 408 (previous request never queued), 409 ``{"error": "source_mismatch", "cell_id"}``,
403 for a user the Authorizer does not let ``execute`` on ``kernels``, or (since a run writes its
outputs into the notebook) ``write`` on ``contents``.
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
    CellNotFound,
    InvalidNotebook,
    KernelDied,
    KernelNotFound,
    NotebookNotFound,
    PathError,
    RequestNotQueued,
    SourceMismatch,
    UsageError,
)
from ganymede.serve.execution.batches import Batch
from ganymede.serve.execution.requests import parse_execute_body
from ganymede.serve.execution.service import Executions
from ganymede.serve.execution.ydoc_outputs import cell_as_room_has_it, find_cell
from ganymede.serve.identity import login_name
from ganymede.serve.roles import CONTENTS, EXECUTE, KERNELS, WRITE, allows
from ganymede.serve.rooms.room import DocumentRoom
from ganymede.serve.service import event_within

EXECUTIONS_SETTINGS_KEY = "ganymede_executions"

REFUSALS: dict[type[Exception], HTTPStatus] = {
    UsageError: HTTPStatus.BAD_REQUEST,
    KernelDied: HTTPStatus.BAD_REQUEST,
    InvalidNotebook: HTTPStatus.BAD_REQUEST,
    PathError: HTTPStatus.BAD_REQUEST,
    KernelNotFound: HTTPStatus.NOT_FOUND,
    NotebookNotFound: HTTPStatus.NOT_FOUND,
    CellNotFound: HTTPStatus.NOT_FOUND,
    RequestNotQueued: HTTPStatus.REQUEST_TIMEOUT,
}


class ExecuteHandler(APIHandler):
    auth_resource = KERNELS

    @web.authenticated
    @authorized(EXECUTE, KERNELS)
    async def post(self, kernel_id: str) -> None:
        if not await allows(self, WRITE, CONTENTS):
            why = "User is not authorized to write on resource: contents (a run writes outputs)."
            raise web.HTTPError(HTTPStatus.FORBIDDEN, why)
        executions: Executions = self.settings[EXECUTIONS_SETTINGS_KEY]
        try:
            request = parse_execute_body(json.loads(self.request.body or b"null"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            return self._refuse(HTTPStatus.BAD_REQUEST, "the body is not JSON")
        except UsageError as error:
            return self._refuse(HTTPStatus.BAD_REQUEST, str(error))
        try:
            batch = await executions.submit(kernel_id, request, self._person)
        except SourceMismatch as error:
            body = {"error": "source_mismatch", "cell_id": error.cell_id}
            return self._answer(HTTPStatus.CONFLICT, body)
        except tuple(REFUSALS) as error:
            status = next(s for kind, s in REFUSALS.items() if isinstance(error, kind))
            return self._refuse(status, str(error))
        if request.until_ran:
            await batch.done.wait()
            if batch.failure is None:
                return self._answer(HTTPStatus.OK, {"status": "ok"})
            return self._answer(
                HTTPStatus.UNPROCESSABLE_ENTITY, {"status": "error", **batch.failure}
            )
        if request.wait is None:
            return self._answer(HTTPStatus.OK, None)
        await event_within(batch.done, request.wait)
        self._answer(HTTPStatus.OK, {"finished": batch.done.is_set(), "cells": _cells(batch)})

    def _person(self, room: DocumentRoom) -> Author:
        """Who asked for the run: the person the room shows for this login (JupyterLab's
        awareness name), else the login's own name."""
        return room.person(login_name(self.current_user))

    def _refuse(self, status: HTTPStatus, message: str) -> None:
        """A JSON error body, written directly (an HTTPError would %-format the message)."""
        self._answer(status, {"message": message, "reason": status.phrase})

    def _answer(self, status: int, body: Any) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body))


def _cells(batch: Batch) -> list[dict[str, Any]]:
    cells = []
    for run in batch.cells:
        ycell = find_cell(batch.notebook, run.cell_id)
        if ycell is not None:
            cells.append(cell_as_room_has_it(ycell))
    return cells


default_handlers = [
    (r"/api/kernels/(?P<kernel_id>\w+-\w+-\w+-\w+-\w+)/execute", ExecuteHandler),
]
