"""The two bodies ``POST /api/kernels/{id}/execute`` accepts, read into one request. Pure.

- jupyter-server-documents': ``{"document_id", "cells": [{"cell_id", "source_hash"}],
  "request_id", "previous_request_id"?, "wait"?}``; answered at once (``null``) or, with
  ``wait``, once the batch ran or ``wait`` seconds passed.
- JupyterLab's server-side cell executor: ``{"cell_id", "document_id"}``, no hash (the room's
  current source runs); it reads a non-2xx answer as a failed cell, so it is answered when the
  cell has run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ganymede.errors import UsageError

NOTEBOOK_ROOM_PREFIX = "json:notebook:"
MAX_WAIT = 3600.0


@dataclass(frozen=True)
class CellRequest:
    cell_id: str
    source_hash: str | None
    """None: run whatever the room holds (JupyterLab's form)."""


@dataclass(frozen=True)
class ExecuteRequest:
    document_id: str
    cells: list[CellRequest]
    request_id: str | None = None
    previous_request_id: str | None = None
    wait: float | None = None
    until_ran: bool = False
    """JupyterLab's form: answer when the cell ran, with its success or its error."""


def parse_execute_body(body: Any) -> ExecuteRequest:
    """The request a decoded JSON body asks for; UsageError naming what is wrong."""
    if not isinstance(body, dict):
        raise UsageError("the body must be a JSON object")
    document_id = _string(body, "document_id")
    if not document_id.startswith(NOTEBOOK_ROOM_PREFIX):
        raise UsageError(f"document_id must be {NOTEBOOK_ROOM_PREFIX}<file id>")
    if "cells" not in body:
        return ExecuteRequest(
            document_id, [CellRequest(_string(body, "cell_id"), None)], until_ran=True
        )
    cells = body["cells"]
    if not isinstance(cells, list) or not cells:
        raise UsageError("cells must be a non-empty list")
    return ExecuteRequest(
        document_id,
        [_cell(cell) for cell in cells],
        request_id=_optional_string(body, "request_id"),
        previous_request_id=_optional_string(body, "previous_request_id"),
        wait=_wait(body.get("wait")),
    )


def _cell(cell: Any) -> CellRequest:
    if not isinstance(cell, dict):
        raise UsageError('each cell must be {"cell_id": …, "source_hash": …}')
    return CellRequest(_string(cell, "cell_id"), _string(cell, "source_hash"))


def _wait(wait: Any) -> float | None:
    if wait is None:
        return None
    if isinstance(wait, bool) or not isinstance(wait, int | float) or not 0 <= wait <= MAX_WAIT:
        raise UsageError(f"wait must be a number of seconds from 0 to {MAX_WAIT:g}")
    return float(wait)


def _string(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise UsageError(f"{key} must be a non-empty string")
    return value


def _optional_string(body: dict[str, Any], key: str) -> str | None:
    return None if body.get(key) is None else _string(body, key)
