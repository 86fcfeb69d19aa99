"""What a notebook's ``parameters`` cell defines, to warn of parameters it never reads.

papermill warns ``Passed unknown parameter`` for a name its parameters cell does not assign: a
misspelt ``-p`` flag otherwise changes nothing and says nothing. Pure logic on the cell's source,
for Python kernels: the names its top-level statements assign, read with ``ast``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from typing import Any

from ganymede.execute.parameters import PARAMETERS_TAG, has_tag


def defined_names(source: str) -> set[str] | None:
    """The names the cell's top-level statements assign; None if it is not Python we can read.

    IPython's ``%magic`` and ``!shell`` lines are set aside first: they assign nothing. A line
    that is not Python is set aside too, one at a time as the parser finds them, so one broken
    line does not hide the cell's other names (papermill skips such lines as well).
    """
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    for _ in range(len(lines) + 1):
        try:
            module = ast.parse("\n".join(lines))
        except SyntaxError as error:
            if not error.lineno or not 0 < error.lineno <= len(lines):
                return None
            lines[error.lineno - 1] = ""
        else:
            return _names_in(module)
    return None


def _names_in(module: ast.Module) -> set[str]:
    names: set[str] = set()
    for statement in module.body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                names.update(_assigned(target))
        elif isinstance(statement, ast.AnnAssign):
            names.update(_assigned(statement.target))
    return names


def _assigned(target: ast.expr) -> Iterator[str]:
    """The plain names an assignment target binds (``a``, ``a, *b``); not ``a.x`` or ``a[0]``."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _assigned(element)
    elif isinstance(target, ast.Starred):
        yield from _assigned(target.value)


def parameter_warnings(notebook: Mapping[str, Any], params: Mapping[str, Any]) -> list[str]:
    """What to warn of before injecting ``params`` into ``notebook`` (a Python notebook).

    No cell tagged ``parameters``: one warning, as the values go in at the top. Otherwise one
    per parameter the first such cell does not assign; none when its source can't be parsed.
    """
    if not params:
        return []
    cells = notebook.get("cells", [])
    cell = next((c for c in cells if has_tag(c, PARAMETERS_TAG)), None)
    if cell is None:
        return [f"no cell is tagged {PARAMETERS_TAG!r}: the parameters are injected at the top"]
    source = cell.get("source", "")
    names = defined_names("".join(source) if isinstance(source, list) else source)
    if names is None:
        return []
    return [
        f"passed unknown parameter {name!r}: the {PARAMETERS_TAG} cell does not set it"
        for name in params
        if name not in names
    ]
