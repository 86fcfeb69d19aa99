"""The server's refusals become the errors it raised, each with the server's own sentence."""

from __future__ import annotations

import httpx
import pytest

from ganymede.errors import (
    CellNotFound,
    EditRefused,
    GanymedeError,
    NotebookNotFound,
    ServerRefused,
    UnknownMark,
    UnknownSession,
    UsageError,
)
from ganymede.mcp.client import refusal


def answer(status: int, body: object) -> httpx.Response:
    return httpx.Response(status, json=body)


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [
        (404, "unknown_session", UnknownSession),
        (404, "unknown_mark", UnknownMark),
        (404, "not_found", NotebookNotFound),
        (404, "no_such_cell", CellNotFound),
        (400, "bad_request", UsageError),
        (409, "exists", ServerRefused),
    ],
)
def test_each_refusal_is_its_error_with_the_servers_message(
    status: int, code: str, kind: type[GanymedeError]
) -> None:
    sent = {"session": "s1", "since": "m1", "path": "a.ipynb", "id": "c1"}
    error = refusal(answer(status, {"error": code, "message": "the server says why"}), sent)
    assert isinstance(error, kind)
    assert str(error) == "the server says why"


def test_a_refused_edit_carries_the_cell_now_and_who_changed_it() -> None:
    cell = {"id": "c1", "cell_type": "code", "source": "a = 1  # Thomas"}
    body = {
        "error": "changed_since_read",
        "message": "cell c1 was changed by Thomas since your last read",
        "cell": cell,
        "by": "Thomas",
    }
    error = refusal(answer(409, body), {})
    assert isinstance(error, EditRefused)
    assert (error.cell, error.by) == (cell, "Thomas")
    assert str(error) == "cell c1 was changed by Thomas since your last read"


def test_an_answer_that_is_not_json_still_says_what_came_back() -> None:
    error = refusal(httpx.Response(502, text="Bad Gateway from the proxy"), {})
    assert isinstance(error, ServerRefused) and error.status == 502
    assert str(error) == "Bad Gateway from the proxy"
