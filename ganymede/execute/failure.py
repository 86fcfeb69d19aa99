"""How a failed run is told to a person: one headline, then the failing cell and its traceback.

``ganymede execute`` prints these on stderr and the pytest plugin puts them in its failure
report, so a failure reads the same in both.
"""

from __future__ import annotations

from typing import Any

from ganymede.execute.ansi import strip_ansi
from ganymede.execute.model import RunOutcome

RULE = "-" * 75


def failure_headline(outcome: RunOutcome) -> str:
    """What went wrong, where: the notebook, the cell (index and id) and the error or reason."""
    error = outcome.error or {}
    path = outcome.request.path
    if "cell_index" not in error:
        return f"{path}: {error.get('message') or outcome.status}"
    where = f"cell {error['cell_index']} (id {error.get('cell_id') or '-'})"
    if outcome.status == "error":
        return f"{path}: {where} raised {error.get('ename')}: {error.get('evalue')}"
    return f"{path}: {where}: {error.get('message') or outcome.status}"


def failure_summary(outcome: RunOutcome) -> str:
    """The error alone, for a line that already names the notebook (pytest's short summary)."""
    error = outcome.error or {}
    if outcome.status == "error" and "ename" in error:
        return f"{error['ename']}: {error.get('evalue', '')}"
    return str(error.get("message") or outcome.status)


def failure_report(outcome: RunOutcome) -> str:
    """The headline, the source of the cell that failed and its traceback, as plain text."""
    error = outcome.error or {}
    parts = [failure_headline(outcome)]
    cell = _failing_cell(outcome.notebook, error)
    if cell is not None:
        source = cell.get("source", "")
        parts += [RULE, "".join(source) if isinstance(source, list) else source, ""]
    traceback = "\n".join(error.get("traceback") or [])
    if traceback:
        parts.append(strip_ansi(traceback))
    return "\n".join(parts)


def _failing_cell(notebook: dict[str, Any], error: dict[str, Any]) -> dict[str, Any] | None:
    index = error.get("cell_index")
    cells = notebook.get("cells", [])
    if isinstance(index, int) and 0 <= index < len(cells):
        return cells[index]
    return None
