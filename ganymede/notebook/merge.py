"""Three-way merge of the notebook a room holds with the file another program rewrote.

``base`` is what the room last read or wrote, ``ours`` the room's notebook now, ``theirs`` the
file now (SPEC §3, "Watcher"). Cells are matched by id:

- a cell only one side changed takes that side's version; cells either side added stay added
  and cells either side deleted (without the other changing them) stay deleted;
- in a cell both changed, three parts merge separately: the ``source`` (with the cell type and
  attachments, which belong to the text), the ``outputs`` with the ``execution_count``, and each
  ``metadata`` key; so a source edit in the room survives an agent running that cell on disk;
- where both changed the same part differently, the file wins that part and a ``Conflict`` says
  so; the same change on both sides is no conflict. If one side changed a cell's type and the
  other its outputs, the two cannot be combined and the file's whole cell wins (part ``cell``);
- a cell the file deleted and the room changed stays deleted; a cell the room deleted and the
  file changed comes back as the file has it; both are ``cell`` conflicts;
- notebook ``metadata`` merges key by key the same way; ``nbformat``/``nbformat_minor`` are the
  file's;
- before nbformat 4.5 cells have no ids, so the file wins outright (part ``notebook`` records it
  when that drops the room's edits).

Order: the file's order, unless only the room reordered cells (the file kept the base's relative
order), in which case the room's order. Cells missing from the order chosen (added by the other
side, or brought back by the file) go right after the nearest cell that precedes them on their
side and survives the merge (so before the other side's cells added at the same place), or at
the top. If both reordered differently, the file's order wins (part ``order``).

A cell id repeated within one notebook (a copied cell's JSON, say) is kept by its first cell; the
n-th repeat is treated as a different cell with the id ``<id>-<n>`` (the next free number if that
is taken), the same on every side, so the merge stays deterministic and its ids unique.

Values compare as JSON, with nbformat's multiline strings (a list of lines or one string) joined,
whole floats as ints and empty attachments as none, so a room's notebook and the same notebook
read from disk are equal.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ganymede.notebook.textmerge import merge_text
from ganymede.notebook.threeway import Side, decide

__all__ = ["Conflict", "MergeResult", "merge_notebooks", "merge_text"]

FIRST_VERSION_WITH_IDS = (4, 5)
MAX_CELL_ID_LENGTH = 64

PartKey = str | None  # a part's canonical JSON; None when the part is absent
_NO_BASE = object()  # the base of a part in a cell both sides added: equal to nothing


@dataclass(frozen=True)
class Conflict:
    """One part both sides changed differently, or a cell one deleted and the other changed.

    The file won it. ``part`` is ``source``, ``outputs``, ``metadata.<key>``, ``cell``,
    ``notebook.metadata.<key>``, ``order`` or ``notebook``; ``cell_id`` is None for the last
    three kinds, which are not about one cell.
    """

    cell_id: str | None
    part: str
    reason: str


@dataclass(frozen=True)
class MergeResult:
    """The merged notebook and what the room has to do with it."""

    notebook: dict[str, Any]
    conflicts: tuple[Conflict, ...]
    file_wins_outright: bool
    room_changed: bool  # the merge differs from the room's notebook: apply it to the room
    file_changed: bool  # the merge differs from the file: save it
    # Ids of merged cells that are, as JSON, exactly the room's cell: nothing to apply there.
    same_in_room: frozenset[str] = frozenset()


def cell_fingerprint(cell: Mapping[str, Any]) -> str:
    """A cell's JSON, keys sorted: equal fingerprints mean equal cells (see ``_CellParts``)."""
    return json.dumps(cell, sort_keys=True, ensure_ascii=False)


Fingerprints = Sequence[str] | None
"""Each cell's ``cell_fingerprint``, in order, when the caller has them (None: work them out)."""


class _CellParts:
    """A cell and the canonical keys of the parts that merge separately.

    The keys cost a JSON dump per part, and most cells of a long notebook are the same on
    every side; so each cell gets one cheap dump of the whole (its ``fingerprint``) and the
    part keys are computed only for a cell whose fingerprints differ. Equal fingerprints mean
    equal JSON, hence equal parts; different ones prove nothing (``2.0`` and ``2``, a list of
    lines and one string), so the parts decide.
    """

    def __init__(self, cell: Mapping[str, Any], fingerprint: str | None = None) -> None:
        self.cell = cell
        self.fingerprint = cell_fingerprint(cell) if fingerprint is None else fingerprint

    @cached_property
    def source(self) -> str:
        attachments = self.cell.get("attachments") or {}  # a room drops empty attachments
        return _canonical(
            {
                "cell_type": self.cell.get("cell_type"),
                "source": _joined(self.cell.get("source", "")),
                "attachments": {
                    name: _normal_bundle(bundle) for name, bundle in attachments.items()
                },
            }
        )

    @cached_property
    def outputs(self) -> PartKey:
        if not _is_code(self.cell):
            return None
        return _canonical(
            {
                "outputs": [_normal_output(output) for output in self.cell.get("outputs", [])],
                "execution_count": self.cell.get("execution_count"),
            }
        )

    @cached_property
    def metadata(self) -> Mapping[str, str]:
        return _metadata_keys(self.cell.get("metadata", {}))

    @cached_property
    def whole(self) -> tuple[object, ...]:
        return (self.source, self.outputs, tuple(sorted(self.metadata.items())))

    def same_as(self, other: _CellParts) -> bool:
        return self.fingerprint == other.fingerprint or self.whole == other.whole


def merge_notebooks(
    base: Mapping[str, Any],
    ours: Mapping[str, Any],
    theirs: Mapping[str, Any],
    *,
    fingerprints: tuple[Fingerprints, Fingerprints, Fingerprints] = (None, None, None),
) -> MergeResult:
    """Merge the room's notebook (``ours``) with the file (``theirs``) since ``base``.

    Inputs are nbformat 4 JSON notebooks and are never changed; the result shares no objects
    with them. ``fingerprints`` may bring each side's cell fingerprints, worked out earlier:
    a version of a file is merged in as ``theirs`` and then serves as the next ``base``.
    """
    if not all(_has_cell_ids(notebook) for notebook in (base, ours, theirs)):
        return _file_wins_outright(base, ours, theirs)
    base_cells, ours_cells, theirs_cells = (
        _parts_by_id(side, side_prints)
        for side, side_prints in zip(
            _cells_by_unique_id((base, ours, theirs)), fingerprints, strict=True
        )
    )
    merged_cells: dict[str, _CellParts] = {}
    conflicts: list[Conflict] = []
    for cell_id in _ordered_union(theirs_cells, ours_cells, base_cells):
        merged_cell, cell_conflicts = _resolve_cell(
            cell_id, base_cells.get(cell_id), ours_cells.get(cell_id), theirs_cells.get(cell_id)
        )
        if merged_cell is not None:
            merged_cells[cell_id] = merged_cell
        conflicts.extend(cell_conflicts)
    order, order_clash = _merged_order(
        list(base_cells), list(ours_cells), list(theirs_cells), set(merged_cells)
    )
    if order_clash:
        conflicts.append(Conflict(None, "order", "both reordered cells; the file's order wins"))
    metadata, metadata_conflicts = _merge_metadata(
        _metadata_keys(base.get("metadata", {})),
        ours.get("metadata", {}),
        theirs.get("metadata", {}),
        cell_id=None,
        prefix="notebook.metadata.",
    )
    conflicts.extend(metadata_conflicts)
    merged = {
        "cells": [{**merged_cells[cell_id].cell, "id": cell_id} for cell_id in order],
        "metadata": metadata,
        "nbformat": theirs["nbformat"],
        "nbformat_minor": theirs["nbformat_minor"],
    }
    merged_read = [(cell_id, merged_cells[cell_id]) for cell_id in order]
    return MergeResult(
        notebook=_json_copy(merged),
        conflicts=tuple(conflicts),
        file_wins_outright=False,
        room_changed=not _same_notebook(merged, merged_read, ours, _as_read(ours_cells)),
        file_changed=not _same_notebook(merged, merged_read, theirs, _as_read(theirs_cells)),
        same_in_room=frozenset(
            cell_id
            for cell_id, parts in merged_read
            if (room_cell := ours_cells.get(cell_id)) is not None
            and room_cell.cell.get("id") == cell_id
            and room_cell.fingerprint == parts.fingerprint
        ),
    )


def _parts_by_id(
    cells: Mapping[str, Mapping[str, Any]], fingerprints: Fingerprints
) -> dict[str, _CellParts]:
    if fingerprints is None:
        return {cell_id: _CellParts(cell) for cell_id, cell in cells.items()}
    return {
        cell_id: _CellParts(cell, fingerprint)
        for (cell_id, cell), fingerprint in zip(cells.items(), fingerprints, strict=True)
    }


def _has_cell_ids(notebook: Mapping[str, Any]) -> bool:
    version = (notebook.get("nbformat", 0), notebook.get("nbformat_minor", 0))
    return version >= FIRST_VERSION_WITH_IDS and all(
        isinstance(cell.get("id"), str) for cell in notebook.get("cells", [])
    )


def _file_wins_outright(
    base: Mapping[str, Any], ours: Mapping[str, Any], theirs: Mapping[str, Any]
) -> MergeResult:
    """Without cell ids nothing can be matched, so the file is taken as it is."""
    ours_read, theirs_read, base_read = (
        [(cell.get("id"), _CellParts(cell)) for cell in notebook["cells"]]
        for notebook in (ours, theirs, base)
    )
    room_changed = not _same_notebook(ours, ours_read, theirs, theirs_read)
    conflicts: tuple[Conflict, ...] = ()
    if room_changed and not _same_notebook(ours, ours_read, base, base_read):
        reason = "a notebook before nbformat 4.5 has no cell ids; the file wins outright"
        conflicts = (Conflict(None, "notebook", reason),)
    return MergeResult(
        notebook=_json_copy(theirs),
        conflicts=conflicts,
        file_wins_outright=True,
        room_changed=room_changed,
        file_changed=False,
    )


def _cells_by_unique_id(
    notebooks: Sequence[Mapping[str, Any]],
) -> list[dict[str, Mapping[str, Any]]]:
    """Each notebook's cells by id, in order, with repeated ids renamed the same on every side."""
    taken = {cell["id"] for notebook in notebooks for cell in notebook["cells"]}
    sides: list[list[tuple[str, int, Mapping[str, Any]]]] = []
    for notebook in notebooks:
        seen: Counter[str] = Counter()
        side = []
        for cell in notebook["cells"]:
            seen[cell["id"]] += 1
            side.append((cell["id"], seen[cell["id"]], cell))
        sides.append(side)
    repeats = sorted({(cell_id, n) for side in sides for cell_id, n, _ in side if n > 1})
    renames: dict[tuple[str, int], str] = {}
    for cell_id, n in repeats:
        renames[cell_id, n] = _fresh_id(cell_id, n, taken)
        taken.add(renames[cell_id, n])
    return [
        {renames.get((cell_id, n), cell_id): cell for cell_id, n, cell in side} for side in sides
    ]


def _fresh_id(cell_id: str, occurrence: int, taken: set[str]) -> str:
    number = occurrence
    while True:
        suffix = f"-{number}"
        candidate = cell_id[: MAX_CELL_ID_LENGTH - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        number += 1


def _ordered_union(*sides: Mapping[str, Any]) -> list[str]:
    return list(dict.fromkeys(cell_id for side in sides for cell_id in side))


def _resolve_cell(
    cell_id: str,
    base: _CellParts | None,
    ours: _CellParts | None,
    theirs: _CellParts | None,
) -> tuple[_CellParts | None, list[Conflict]]:
    """The merged cell (None: deleted) for one id, and its conflicts."""
    if ours is not None and theirs is not None:
        return _merge_cell(cell_id, base, ours, theirs)
    if ours is not None:
        if base is None:
            return ours, []
        if ours.same_as(base):
            return None, []
        reason = "the file deleted a cell the room changed; it stays deleted"
        return None, [Conflict(cell_id, "cell", reason)]
    if theirs is not None:
        if base is None:
            return theirs, []
        if theirs.same_as(base):
            return None, []
        reason = "the room deleted a cell the file changed; the file's cell comes back"
        return theirs, [Conflict(cell_id, "cell", reason)]
    return None, []


def _merge_cell(
    cell_id: str, base: _CellParts | None, ours: _CellParts, theirs: _CellParts
) -> tuple[_CellParts, list[Conflict]]:
    """A cell both sides have: whole when one side left it alone, else part by part."""
    if ours.same_as(theirs) or (base is not None and ours.same_as(base)):
        return theirs, []
    if base is not None and theirs.same_as(base):
        return ours, []
    source_side, source_clash = _pick(
        _NO_BASE if base is None else base.source, ours.source, theirs.source
    )
    outputs_side, outputs_clash = _pick(
        _NO_BASE if base is None else base.outputs, ours.outputs, theirs.outputs
    )
    source_cell = (ours if source_side is Side.OURS else theirs).cell
    outputs_cell = (ours if outputs_side is Side.OURS else theirs).cell
    if _is_code(source_cell) != _is_code(outputs_cell):
        reason = "one side changed the cell type and the other its outputs; the file's cell wins"
        return theirs, [Conflict(cell_id, "cell", reason)]
    metadata, conflicts = _merge_metadata(
        None if base is None else base.metadata,
        ours.cell.get("metadata", {}),
        theirs.cell.get("metadata", {}),
        cell_id=cell_id,
        prefix="metadata.",
    )
    merged: dict[str, Any] = {
        "id": cell_id,
        "cell_type": source_cell["cell_type"],
        "metadata": metadata,
        "source": source_cell["source"],
    }
    if "attachments" in source_cell:
        merged["attachments"] = source_cell["attachments"]
    if _is_code(source_cell):
        merged["outputs"] = outputs_cell["outputs"]
        merged["execution_count"] = outputs_cell["execution_count"]
    part_conflicts = []
    if source_clash:
        reason = "both changed the source; the file's source wins"
        part_conflicts.append(Conflict(cell_id, "source", reason))
    if outputs_clash:
        reason = "both changed the outputs; the file's outputs and execution count win"
        part_conflicts.append(Conflict(cell_id, "outputs", reason))
    return _CellParts(merged), part_conflicts + conflicts


def _pick(base: object, ours: object, theirs: object) -> tuple[Side, bool]:
    """Which side a part comes from (by its keys), and whether both changed it differently.

    A part both hold alike is the file's, so the merged cell keeps the file's writing of it
    (a list of lines where the room holds one string, say).
    """
    return decide(base, ours, theirs, alike=Side.THEIRS)


def _merge_metadata(
    base_keys: Mapping[str, str] | None,
    ours: Mapping[str, Any],
    theirs: Mapping[str, Any],
    *,
    cell_id: str | None,
    prefix: str,
) -> tuple[dict[str, Any], list[Conflict]]:
    """Metadata merged key by key; ``base_keys`` None means the base has no such object."""
    ours_keys = _metadata_keys(ours)
    theirs_keys = _metadata_keys(theirs)
    merged: dict[str, Any] = {}
    conflicts: list[Conflict] = []
    for key in _ordered_union(theirs, ours):
        base_key: object = _NO_BASE if base_keys is None else base_keys.get(key)
        side, clash = _pick(base_key, ours_keys.get(key), theirs_keys.get(key))
        winner = ours if side is Side.OURS else theirs
        if key in winner:
            merged[key] = winner[key]
        if clash:
            reason = f"both changed metadata {key!r}; the file's value wins"
            conflicts.append(Conflict(cell_id, prefix + key, reason))
    return merged, conflicts


def _merged_order(
    base: list[str], ours: list[str], theirs: list[str], kept: set[str]
) -> tuple[list[str], bool]:
    """The merged cell order, and whether both sides reordered cells differently."""
    room_reordered = _reordered(ours, base)
    file_reordered = _reordered(theirs, base)
    primary, guide = (ours, theirs) if room_reordered and not file_reordered else (theirs, ours)
    skeleton = [cell_id for cell_id in primary if cell_id in kept]
    order = _interleave(skeleton, guide, kept.difference(skeleton))
    clash = (
        room_reordered
        and file_reordered
        and _common_order(ours, theirs) != _common_order(theirs, ours)
    )
    return order, clash


def _reordered(side: list[str], base: list[str]) -> bool:
    return _common_order(side, base) != _common_order(base, side)


def _common_order(first: list[str], second: list[str]) -> list[str]:
    """``first``'s ids that ``second`` also has, in ``first``'s order."""
    shared = set(second)
    return [cell_id for cell_id in first if cell_id in shared]


def _interleave(skeleton: list[str], guide: list[str], missing: set[str]) -> list[str]:
    """``skeleton`` with each ``missing`` id placed after its nearest placed predecessor in
    ``guide`` (or at the top), keeping ``guide``'s order among them."""
    order = list(skeleton)
    placed = set(skeleton)
    anchor: str | None = None
    for cell_id in guide:
        if cell_id in missing:
            order.insert(0 if anchor is None else order.index(anchor) + 1, cell_id)
            placed.add(cell_id)
            anchor = cell_id
        elif cell_id in placed:
            anchor = cell_id
    return order


def _is_code(cell: Mapping[str, Any]) -> bool:
    return cell.get("cell_type") == "code"


def _metadata_keys(metadata: Mapping[str, Any]) -> dict[str, str]:
    return {key: _canonical(value) for key, value in metadata.items()}


def _same_notebook(
    first: Mapping[str, Any],
    first_cells: Sequence[tuple[object, _CellParts]],
    second: Mapping[str, Any],
    second_cells: Sequence[tuple[object, _CellParts]],
) -> bool:
    """Whether two notebooks are the same notebook, whatever their line splitting."""
    return (
        first.get("nbformat") == second.get("nbformat")
        and first.get("nbformat_minor") == second.get("nbformat_minor")
        and _metadata_keys(first.get("metadata", {})) == _metadata_keys(second.get("metadata", {}))
        and len(first_cells) == len(second_cells)
        and all(
            first_id == second_id and first_parts.same_as(second_parts)
            for (first_id, first_parts), (second_id, second_parts) in zip(
                first_cells, second_cells, strict=True
            )
        )
    )


def _as_read(cells: Mapping[str, _CellParts]) -> list[tuple[object, _CellParts]]:
    """A side's cells under the ids it gave them, so a repaired repeat counts as a change."""
    return [(parts.cell.get("id"), parts) for parts in cells.values()]


def _json_copy(value: Any) -> Any:
    """A copy of JSON data sharing no containers with it; through the C encoder and decoder,
    several times faster than walking it in Python."""
    return json.loads(json.dumps(value, ensure_ascii=False))


def _canonical(value: Any) -> str:
    """JSON text for comparing values: ``True`` and ``1`` differ, key order does not matter."""
    return json.dumps(
        _plain_numbers(value), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )


def _plain_numbers(value: Any) -> Any:
    """``value`` with whole floats as ints: a room's document keeps every number as a float
    and gives whole ones back as ints, so ``2.0`` read from a file must equal the room's ``2``."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {key: _plain_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain_numbers(item) for item in value]
    return value


def _joined(text: Any) -> Any:
    """nbformat stores multiline strings as one string or a list of lines; compare them joined."""
    if isinstance(text, list) and all(isinstance(line, str) for line in text):
        return "".join(text)
    return text


def _normal_bundle(bundle: Mapping[str, Any]) -> dict[str, Any]:
    """A mime bundle with its text values joined; JSON values are data and stay as they are."""
    return {
        mime: value if mime.startswith("application/") and mime.endswith("json") else _joined(value)
        for mime, value in bundle.items()
    }


def _normal_output(output: Mapping[str, Any]) -> dict[str, Any]:
    normal = dict(output)
    if "text" in normal:
        normal["text"] = _joined(normal["text"])
    if isinstance(normal.get("data"), Mapping):
        normal["data"] = _normal_bundle(normal["data"])
    return normal
