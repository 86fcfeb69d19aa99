"""What a room must hold after it takes in another program's change, from SPEC §3's words alone.

Written apart from ``ganymede.notebook.merge`` on purpose: the stress scripts compare the product
against this, so the two must not share a mistake. It works on plain notebooks (normalised dicts,
see ``normalise``) and says, per cell and per part, which side the rules keep:

- a part only the room changed keeps the room's version; a part only the file changed takes the
  file's; cells the file added are added, cells it deleted are deleted (and so for the room);
- the parts of a cell are its source, its outputs together with its execution count, each metadata
  key, and its type; they merge separately;
- where both changed the same part, or one deleted what the other changed, the file wins it and that
  is a conflict; notebook metadata merges key by key the same way.

(A file without cell ids wins outright; the torture writes none, so the oracle has no rule for it.)

The SPEC does not say where merged cells sit, so the oracle only promises orders both sides agree
on: the file's cells keep the file's order, and the room's own new cells keep the room's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

Cell = dict[str, Any]
Notebook = dict[str, Any]

ABSENT = object()  # a metadata key, or a whole cell, that one side does not have


@dataclass(frozen=True)
class Conflict:
    """A part both sides changed (or one deleted while the other changed): the file won it."""

    cell_id: str | None  # None for notebook metadata
    kind: (
        str  # "source", "outputs", "metadata", "cell_type", "deleted", "added", "notebook-metadata"
    )


@dataclass
class Expected:
    """The merge the rules call for, and the conflicts it resolved in the file's favour."""

    notebook: Notebook
    conflicts: list[Conflict] = field(default_factory=list)
    file_order: list[str] = field(default_factory=list)
    room_added_order: list[str] = field(default_factory=list)


def joined(text: str | list[str]) -> str:
    return text if isinstance(text, str) else "".join(text)


def normalise_output(output: dict[str, Any]) -> dict[str, Any]:
    """One output with its multiline strings joined, as both nbformat and the ydoc mean them."""
    normal = dict(output)
    if "text" in normal:
        normal["text"] = joined(normal["text"])
    if isinstance(normal.get("data"), dict):
        normal["data"] = {
            kind: joined(value) if isinstance(value, list) else value
            for kind, value in normal["data"].items()
        }
    return normal


def normalise_cell(cell: Cell) -> Cell:
    """A cell reduced to what the merge rules speak of, in one spelling for file and room."""
    normal: Cell = {
        "id": cell.get("id"),
        "cell_type": cell["cell_type"],
        "source": joined(cell.get("source", "")),
        "metadata": dict(cell.get("metadata", {})),
    }
    if cell["cell_type"] == "code":
        normal["outputs"] = [normalise_output(o) for o in cell.get("outputs", [])]
        normal["execution_count"] = cell.get("execution_count")
    return normal


def normalise(notebook: Notebook) -> Notebook:
    """A notebook (from a file or a room's ``get()``) in the shape the oracle compares."""
    return {
        "cells": [normalise_cell(cell) for cell in notebook["cells"]],
        "metadata": dict(notebook.get("metadata", {})),
        "nbformat": int(notebook.get("nbformat", 4)),
        "nbformat_minor": int(notebook.get("nbformat_minor", 0)),
    }


def canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def cell_parts(cell: Cell) -> dict[str, object]:
    """The separately merged parts of a cell, each keyed by a name that says what kind it is."""
    parts: dict[str, object] = {"source": cell["source"], "cell_type": cell["cell_type"]}
    parts["outputs"] = (cell.get("outputs"), cell.get("execution_count"))
    for key, value in cell["metadata"].items():
        parts[f"metadata:{key}"] = value
    return parts


def pick(base: object, ours: object, theirs: object) -> tuple[object, bool]:
    """The three-way rule for one part: whose value stays, and whether it was a conflict."""
    same_ours, same_theirs = canonical_or_absent(base, ours), canonical_or_absent(base, theirs)
    if same_ours:
        return theirs, False
    if same_theirs or canonical_or_absent(ours, theirs):
        return ours, False
    return theirs, True


def canonical_or_absent(left: object, right: object) -> bool:
    if left is ABSENT or right is ABSENT:
        return left is right
    return canonical(left) == canonical(right)


def merge_cell(base: Cell, ours: Cell, theirs: Cell) -> tuple[Cell, list[Conflict]]:
    base_parts, our_parts, their_parts = cell_parts(base), cell_parts(ours), cell_parts(theirs)
    merged: dict[str, object] = {}
    conflicts: list[Conflict] = []
    for name in dict.fromkeys([*base_parts, *our_parts, *their_parts]):
        value, clash = pick(
            base_parts.get(name, ABSENT), our_parts.get(name, ABSENT), their_parts.get(name, ABSENT)
        )
        if clash:
            conflicts.append(Conflict(theirs["id"], name.split(":")[0]))
        if value is not ABSENT:
            merged[name] = value
    cell: Cell = {"id": theirs["id"], "cell_type": merged["cell_type"], "source": merged["source"]}
    cell["metadata"] = {
        name.split(":", 1)[1]: value
        for name, value in merged.items()
        if name.startswith("metadata:")
    }
    if cell["cell_type"] == "code":
        outputs, count = merged["outputs"]  # type: ignore[misc]
        cell["outputs"], cell["execution_count"] = outputs or [], count
    return cell, conflicts


def by_id(notebook: Notebook) -> dict[str, Cell]:
    return {cell["id"]: cell for cell in notebook["cells"]}


def expected_merge(base: Notebook, ours: Notebook, theirs: Notebook) -> Expected:
    """What the room must hold after taking in ``theirs`` (the file) over ``ours`` (the room),
    ``base`` being what the room last read or wrote; all three normalised."""
    base_cells, our_cells, their_cells = by_id(base), by_id(ours), by_id(theirs)
    merged: dict[str, Cell] = {}
    conflicts: list[Conflict] = []
    for cell_id in dict.fromkeys([*base_cells, *our_cells, *their_cells]):
        in_base, in_ours, in_theirs = (
            cell_id in base_cells,
            cell_id in our_cells,
            cell_id in their_cells,
        )
        if in_ours and in_theirs and in_base:
            merged[cell_id], clashes = merge_cell(
                base_cells[cell_id], our_cells[cell_id], their_cells[cell_id]
            )
            conflicts += clashes
        elif in_ours and in_theirs:  # both added this id: the file's cell wins if they differ
            if not unchanged(our_cells[cell_id], their_cells[cell_id]):
                conflicts.append(Conflict(cell_id, "added"))
            merged[cell_id] = their_cells[cell_id]
        elif in_theirs and not in_ours:
            if in_base and unchanged(base_cells[cell_id], their_cells[cell_id]):
                continue  # the room deleted a cell the file left alone
            if in_base:
                conflicts.append(Conflict(cell_id, "deleted"))  # file changed what the room deleted
            merged[cell_id] = their_cells[cell_id]
        elif in_ours and not in_theirs:
            if not in_base:
                merged[cell_id] = our_cells[cell_id]  # the room added it
            elif not unchanged(base_cells[cell_id], our_cells[cell_id]):
                conflicts.append(Conflict(cell_id, "deleted"))  # file deleted what the room changed
    metadata, metadata_conflicts = merge_metadata(base, ours, theirs)
    conflicts += metadata_conflicts
    file_order = [c["id"] for c in theirs["cells"] if c["id"] in merged]
    room_added = [
        c["id"]
        for c in ours["cells"]
        if c["id"] in merged and c["id"] not in base_cells and c["id"] not in their_cells
    ]
    ordered = [merged[i] for i in file_order] + [merged[i] for i in room_added]
    notebook = {**theirs, "cells": ordered, "metadata": metadata}
    return Expected(notebook, conflicts, file_order, room_added)


def unchanged(before: Cell, after: Cell) -> bool:
    return canonical(before) == canonical(after)


def merge_metadata(
    base: Notebook, ours: Notebook, theirs: Notebook
) -> tuple[dict[str, object], list[Conflict]]:
    merged: dict[str, object] = {}
    conflicts: list[Conflict] = []
    keys = dict.fromkeys([*base["metadata"], *ours["metadata"], *theirs["metadata"]])
    for key in keys:
        value, clash = pick(
            base["metadata"].get(key, ABSENT),
            ours["metadata"].get(key, ABSENT),
            theirs["metadata"].get(key, ABSENT),
        )
        if clash:
            conflicts.append(Conflict(None, "notebook-metadata"))
        if value is not ABSENT:
            merged[key] = value
    return merged, conflicts


def shown(value: object) -> str:
    return "<absent>" if value is ABSENT else repr(value)


def differences(expected: Expected, actual: Notebook) -> list[str]:
    """Every way ``actual`` (normalised) breaks the expectation, as lines a person can read;
    empty when it holds. Cells are compared by id; order only where the rules fix it."""
    problems: list[str] = []
    want, have = by_id(expected.notebook), by_id(actual)
    if len(have) != len(actual["cells"]):
        problems.append("duplicate cell ids")
    for cell_id, cell in want.items():
        if cell_id not in have:
            problems.append(f"cell {cell_id} lost")
            continue
        wanted_parts, actual_parts = cell_parts(cell), cell_parts(have[cell_id])
        for name in dict.fromkeys([*wanted_parts, *actual_parts]):
            wanted, actual_part = wanted_parts.get(name, ABSENT), actual_parts.get(name, ABSENT)
            if not canonical_or_absent(wanted, actual_part):
                problems.append(
                    f"cell {cell_id} {name}: want {shown(wanted)}, have {shown(actual_part)}"
                )
    problems += [f"cell {cell_id} not wanted, present" for cell_id in have.keys() - want.keys()]
    if canonical(expected.notebook["metadata"]) != canonical(actual["metadata"]):
        problems.append(
            f"notebook metadata: want {expected.notebook['metadata']!r}, "
            f"have {actual['metadata']!r}"
        )
    for label, order in (("file", expected.file_order), ("room-added", expected.room_added_order)):
        seen = [c["id"] for c in actual["cells"] if c["id"] in set(order)]
        if seen != [i for i in order if i in have]:
            problems.append(f"{label} cells out of order: want {order}, have {seen}")
    return problems
