"""The papermill-compatible injected-parameters cell, so papermill notebooks run unchanged.

papermill puts a code cell tagged ``injected-parameters`` right after the first cell tagged
``parameters`` (at the top when there is none); its assignments override the defaults above it.
Ganymede writes the same cell for Python kernels (other languages read ``GANYMEDE_PARAMS``
instead), replacing the cell a previous run left, so the notebook always shows the parameters of
the run that produced its outputs. ``metadata.papermill.parameters`` records them where
papermill's and scrapbook's readers look (``scrapbook.read_notebook(path).parameters``).
"""

from __future__ import annotations

import copy
import keyword
import math
import uuid
from collections.abc import Mapping
from typing import Any

from ganymede.errors import UsageError

PARAMETERS_TAG = "parameters"
INJECTED_TAG = "injected-parameters"
HEADER = "# Parameters"


def python_literal(value: Any) -> str:
    """``value`` (JSON data) as Python source that evaluates back to it."""
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return f"float({str(value)!r})"
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(python_literal(item) for item in value) + "]"
    if isinstance(value, Mapping):
        items = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise UsageError(f"parameter keys must be strings, not {key!r}")
            items.append(f"{key!r}: {python_literal(item)}")
        return "{" + ", ".join(items) + "}"
    raise UsageError(f"a parameter value must be JSON data, not {type(value).__name__}")


def parameters_source(params: Mapping[str, Any]) -> str:
    """The injected cell's source: a ``# Parameters`` line, then one assignment per parameter."""
    lines = [HEADER]
    for name, value in params.items():
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise UsageError(
                f"parameter {name!r} is not a Python name, so it cannot be injected "
                "(read it with ganymede.kernel.params(), or run with --no-inject)"
            )
        lines.append(f"{name} = {python_literal(value)}")
    return "\n".join(lines) + "\n"


def has_tag(cell: Mapping[str, Any], tag: str) -> bool:
    tags = (cell.get("metadata") or {}).get("tags") or []
    return tag in tags


def inject_parameters(notebook: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``notebook`` with this run's injected-parameters cell in place.

    Cells a previous run injected are dropped. The new cell goes right after the first cell
    tagged ``parameters``, or first of all in a notebook without one, as papermill puts it; a
    run without parameters gets none.
    """
    injected = copy.deepcopy(dict(notebook))
    cells = [cell for cell in injected.get("cells", []) if not has_tag(cell, INJECTED_TAG)]
    injected["cells"] = cells
    anchor = next((i for i, cell in enumerate(cells) if has_tag(cell, PARAMETERS_TAG)), -1)
    if not params:
        return injected
    cell: dict[str, Any] = {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {"tags": [INJECTED_TAG]},
        "outputs": [],
        "source": parameters_source(params),
    }
    if _has_cell_ids(injected):
        cell["id"] = _fresh_cell_id({c.get("id") for c in cells})
    cells.insert(anchor + 1, cell)
    return injected


def papermill_metadata(metadata: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """Notebook metadata with ``papermill.parameters`` set to this run's parameters.

    The whole ``papermill`` section is replaced: what a previous papermill run recorded there
    (its times, its exception) described outputs this run clears. Only that key changes, so
    the rest of the metadata (widget state can be large) is shared, not copied.
    """
    updated = dict(metadata)
    updated["papermill"] = {"parameters": copy.deepcopy(dict(params))}
    return updated


def _has_cell_ids(notebook: Mapping[str, Any]) -> bool:
    """Cell ids exist from nbformat 4.5; older notebooks must not get them (they'd be invalid)."""
    return (notebook.get("nbformat", 0), notebook.get("nbformat_minor", 0)) >= (4, 5)


def _fresh_cell_id(taken: set[Any]) -> str:
    while True:
        candidate = uuid.uuid4().hex[:8]
        if candidate not in taken:
            return candidate
