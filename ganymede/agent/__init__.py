"""The agent core: who changed what, read marks, change reports, request cells.

Pure logic lives in ``changes`` and ``marks``; the server ties rooms' updates to authors and
hands snapshots in, the MCP tools render the reports.
"""

from ganymede.agent.changes import (
    ANOTHER_PROGRAM,
    PERSON,
    UNKNOWN_AUTHOR,
    Author,
    AuthorKind,
    CellAuthors,
    CellChange,
    CellState,
    Change,
    Reader,
    Stamp,
    addresses_agent,
    cell_state,
    changed_line,
    join_names,
    notebook_states,
    report_changes,
    request_names,
)
from ganymede.agent.marks import Mark, MarkBook, changed_since

__all__ = [
    "ANOTHER_PROGRAM",
    "PERSON",
    "UNKNOWN_AUTHOR",
    "Author",
    "AuthorKind",
    "CellAuthors",
    "CellChange",
    "CellState",
    "Change",
    "Mark",
    "MarkBook",
    "Reader",
    "Stamp",
    "addresses_agent",
    "cell_state",
    "changed_line",
    "changed_since",
    "join_names",
    "notebook_states",
    "report_changes",
    "request_names",
]
