"""The execute endpoint's two bodies, and what it refuses to read."""

from __future__ import annotations

from typing import Any

import pytest

from ganymede.errors import UsageError
from ganymede.serve.execution.requests import CellRequest, ExecuteRequest, parse_execute_body

DOCUMENT = "json:notebook:f"


def test_the_documents_form() -> None:
    body = {
        "document_id": DOCUMENT,
        "cells": [{"cell_id": "a", "source_hash": "0"}],
        "request_id": "r2",
        "previous_request_id": "r1",
        "wait": 5,
    }
    assert parse_execute_body(body) == ExecuteRequest(
        DOCUMENT, [CellRequest("a", "0")], "r2", "r1", 5.0
    )


def test_jupyterlabs_form_runs_the_rooms_source_and_answers_when_it_ran() -> None:
    assert parse_execute_body({"cell_id": "a", "document_id": DOCUMENT}) == ExecuteRequest(
        DOCUMENT, [CellRequest("a", None)], until_ran=True
    )


@pytest.mark.parametrize(
    "body",
    [
        None,
        [],
        {"cell_id": "a"},
        {"cell_id": "a", "document_id": "text:file:f"},
        {"document_id": DOCUMENT, "cells": []},
        {"document_id": DOCUMENT, "cells": [{"cell_id": "a"}]},
        {"document_id": DOCUMENT, "cells": ["a"]},
        {"document_id": DOCUMENT, "cells": [{"cell_id": "a", "source_hash": 0}]},
        {"document_id": DOCUMENT, "cells": [{"cell_id": "a", "source_hash": "0"}], "wait": True},
        {"document_id": DOCUMENT, "cells": [{"cell_id": "a", "source_hash": "0"}], "wait": 3601},
        {"document_id": DOCUMENT, "cells": [{"cell_id": "a", "source_hash": "0"}], "wait": -1},
    ],
)
def test_malformed_bodies_are_usage_errors(body: Any) -> None:
    with pytest.raises(UsageError):
        parse_execute_body(body)
