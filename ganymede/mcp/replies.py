"""What the MCP tools say to the model: the server's answers as ``@@`` text, with no I/O.

Notebooks and cells go through ``ganymede.notebook.render`` (the ``@@cell`` format); the rest
follows its shape: one ``@@<kind> {compact json}`` header per item, so a model reads every reply
the same way. ``Reply`` keeps the text and the images apart: the door sends the images as MCP
image content and ends every reply with the server's ``@@changed`` lines.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ganymede.errors import UsageError
from ganymede.notebook.render import (
    ImageOutput,
    notebook_language,
    render_cell,
    render_notebook,
)


@dataclass(frozen=True)
class Reply:
    """A tool's answer: text for the model, and the images its text names by ``ref``."""

    text: str
    images: list[ImageOutput] = field(default_factory=list)


def header(kind: str, fields: Mapping[str, Any]) -> str:
    """``@@kind {json}``, keys sorted and compact, as the ``@@cell`` format writes headers."""
    body = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"@@{kind} {body}"


def read_reply(
    answer: Mapping[str, Any],
    *,
    cells: Sequence[str | int] | None = None,
    outputs: bool = True,
) -> Reply:
    """``notebook_read``: the notebook (or with ``since``, the cells that changed), what
    changed and by whom, and the new mark to pass as ``since`` next time."""
    path = str(answer["path"])
    notebook = answer["notebook"]
    changes = answer.get("changes")
    shown: Sequence[str | int] | None = cells
    if changes is not None and cells is None:
        shown = [str(entry["id"]) for entry in changes if "deleted" not in entry["change"]]
    rendering = render_notebook(notebook, path=path, cells=shown, outputs=outputs)
    blocks = [rendering.text.rstrip("\n")]
    if changes is not None:
        blocks.append(changes_text(changes) if changes else "No changes by others since then.")
    if answer.get("mark") is not None:  # a resource read leaves the agent's mark alone
        blocks.append(mark_line(path, str(answer["mark"])))
    return Reply("\n\n".join(blocks) + "\n", rendering.images)


def changes_text(changes: Iterable[Mapping[str, Any]]) -> str:
    """One ``@@change`` line per cell others changed (as the server reported it)."""
    return "\n".join(header("change", entry) for entry in changes)


def mark_line(path: str, mark: str) -> str:
    return (
        header("mark", {"mark": mark, "path": path})
        + f'\nYour read mark is now "{mark}": call notebook_read(since: "{mark}") '
        "to see what others change next."
    )


def full_cell_text(answer: Mapping[str, Any], cell_key: str) -> str:
    """One cell with its outputs uncut: where a cut output's ``notebook://…`` ref leads."""
    path = str(answer["path"])
    cells = answer["notebook"].get("cells") or []
    for index, cell in enumerate(cells):
        if cell.get("id") == cell_key or str(index) == cell_key:
            return render_cell(
                cell,
                index=index,
                path=path,
                language=language_of(answer["notebook"]),
                max_text=sys.maxsize,
            ).text
    raise UsageError(f"no cell {cell_key} in {path}")


def unknown_cells(notebook: Mapping[str, Any], cells: Sequence[str | int]) -> list[str | int]:
    """The selectors of ``cells`` that name no cell of ``notebook`` (by id or index)."""
    all_cells = notebook.get("cells") or []
    ids = {cell.get("id") for cell in all_cells}
    return [
        selector
        for selector in cells
        if not (isinstance(selector, int) and 0 <= selector < len(all_cells))
        and selector not in ids
    ]


def edit_reply(operation: str, path: str, answer: Mapping[str, Any]) -> Reply:
    """``cell_add`` / ``cell_edit`` / ``cell_delete`` / ``cell_move``: what is where now."""
    done = {"add": "added", "edit": "edited", "delete": "deleted", "move": "moved"}[operation]
    return Reply(header(done, {"path": path, **answer}) + "\n")


def suggestion_reply(answer: Mapping[str, Any]) -> Reply:
    """A change made as a suggestion: its id, and that a person decides (the outcome comes as
    an ``@@suggestion`` line at the end of a later reply)."""
    suggestion = answer["suggestion"]
    shown = {key: suggestion[key] for key in ("id", "path", "op", "cell", "title")}
    return Reply(
        header("suggested", shown) + "\nWaiting for a person to accept or reject it; "
        "a later reply ends with its outcome (suggestions_list shows them all).\n"
    )


def suggestions_reply(suggestions: list[Mapping[str, Any]]) -> Reply:
    """``suggestions_list``: one header line per suggestion, decided or not."""
    if not suggestions:
        return Reply("No suggestions.\n")
    keys = ("id", "path", "op", "cell", "title", "outcome", "by", "changed_since")
    lines = [header("suggestion", {key: s.get(key) for key in keys}) for s in suggestions]
    return Reply("\n".join(lines) + "\n")


def refused_edit_text(cell: Mapping[str, Any], by: str, message: str, path: str) -> str:
    """A refused edit: why, the cell as it is now, and how to redo the edit on top of it."""
    index = cell.get("index")
    rendering = render_cell(cell, index=index if isinstance(index, int) else -1, path=path)
    return (
        f"Refused: {message}.\nThe cell as {by} left it:\n\n{rendering.text}\n"
        "Redo your edit on top of this source (your read mark did not move; "
        f"notebook_read(path: {json.dumps(path)}) shows the rest)."
    )


def run_reply(path: str, answer: Mapping[str, Any], language: str = "") -> Reply:
    """``cell_run``: each cell with its outputs, and whether the run finished in time."""
    blocks = []
    images: list[ImageOutput] = []
    for position, shared_cell in enumerate(answer.get("cells") or []):
        cell = _whole_counts(shared_cell)
        index = cell.get("index")
        rendering = render_cell(
            cell, index=index if isinstance(index, int) else position, path=path, language=language
        )
        blocks.append(rendering.text.rstrip("\n"))
        images.extend(rendering.images)
    failure = answer.get("error")
    if failure:
        blocks.append(
            f"The run stopped: {failure if isinstance(failure, str) else json.dumps(failure)}"
        )
    if not answer.get("finished", True):
        blocks.append(
            "Still running: the outputs above are those so far. Call notebook_read(path: "
            f"{json.dumps(path)}) later for the rest, or kernel_interrupt to stop it."
        )
    return Reply("\n\n".join(blocks) + "\n", images)


def _whole_counts(cell: Mapping[str, Any]) -> dict[str, Any]:
    """The cell with its execution counts as integers: a shared document stores numbers as
    floats, and ``1.0`` is not how a notebook counts."""

    def whole(value: Any) -> Any:
        return int(value) if isinstance(value, float) and value.is_integer() else value

    outputs = [
        {**output, "execution_count": whole(output["execution_count"])}
        if "execution_count" in output
        else output
        for output in cell.get("outputs") or []
    ]
    fixed = {**cell, "outputs": outputs}
    if "execution_count" in cell:
        fixed["execution_count"] = whole(cell["execution_count"])
    return fixed


def language_of(notebook: Mapping[str, Any]) -> str:
    return notebook_language(notebook.get("metadata") or {})


def json_lines(kind: str, items: Iterable[Mapping[str, Any]], empty: str) -> Reply:
    """A listing: one ``@@kind`` line per item, or ``empty`` when there is none."""
    lines = [header(kind, item) for item in items]
    return Reply(("\n".join(lines) if lines else empty) + "\n")


def search_reply(answer: Mapping[str, Any]) -> Reply:
    hits = list(answer.get("hits") or [])
    text = json_lines("hit", hits, "No cell matches.").text
    if answer.get("truncated"):
        text += f"Showing {len(hits)} of {answer.get('total')} hits: narrow the query or dir.\n"
    return Reply(text)


def value_reply(kind: str, value: Mapping[str, Any]) -> Reply:
    return Reply(header(kind, value) + "\n")


def with_changed_lines(reply: Reply, lines: Sequence[str]) -> Reply:
    """The reply ending with the server's ``@@changed`` lines, one per notebook."""
    if not lines:
        return reply
    return Reply(reply.text.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n", reply.images)
