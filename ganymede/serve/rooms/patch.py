"""Bring a live document to a target content with the smallest changes, never a reset.

A room takes in another program's change while clients are typing into the same document.
Replacing the whole document (jupyter_ydoc's ``set``) would wipe their cursors and race their
keystrokes; so only what differs is touched: cells are matched by id and inserted or deleted,
a changed source gets a text diff, outputs and each metadata key are replaced only if they
differ. Yjs 13 (the JupyterLab frontend) cannot decode pycrdt's array move, so a moved cell is
deleted and inserted anew, as jupyter_ydoc does.

Documents of other types are patched root by root (``patch_map_to``, ``patch_array_to``): the
target's values may be shared values of another document (the file's version, loaded into a
scratch document of the same class), copied in with the same shape when they are inserted.

pycrdt ``Text`` positions count UTF-8 bytes (``len(Text("a📊b")) == 6``) while Python slices
count code points; ``text_edits`` works in code points and ``patch_text`` converts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import accumulate
from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import Array, Map, Text

from ganymede.serve.rooms.document import as_read_back, read_shared

# A changed run of lines up to this many characters a side is refined to characters; past it
# the character diff costs more than the few bytes it saves.
REFINE_LIMIT = 2000
# Past one cell in this many to compare, reading every cell in one go costs less than reading
# each: reading all crosses into Rust once, reading one cell once per cell.
_READ_ALL_PAST = 8
# Keys the shared cell keeps for itself: the id is matched on, execution_state is runtime only.
_CELL_KEYS_KEPT = frozenset({"id", "execution_state"})


@dataclass(frozen=True)
class TextEdit:
    """Replace ``old[start:end]`` (code points) with ``text``."""

    start: int
    end: int
    text: str


def text_edits(old: str, new: str) -> list[TextEdit]:
    """Non-overlapping edits, in order, that turn ``old`` into ``new``.

    Lines are matched first (cheap on long texts), then a changed run of lines is refined to
    characters, so typing one word in a long cell is one small insert.
    """
    if old == new:
        return []
    head = _common_prefix(old, new)
    tail = _common_prefix(old[head:][::-1], new[head:][::-1])
    old_middle, new_middle = old[head : len(old) - tail], new[head : len(new) - tail]
    old_lines = old_middle.splitlines(keepends=True)
    new_lines = new_middle.splitlines(keepends=True)
    old_starts = [0, *accumulate(len(line) for line in old_lines)]
    new_starts = [0, *accumulate(len(line) for line in new_lines)]
    edits: list[TextEdit] = []
    matcher = SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old_start, old_end = old_starts[i1], old_starts[i2]
        new_start, new_end = new_starts[j1], new_starts[j2]
        for edit in _refined(old_middle[old_start:old_end], new_middle[new_start:new_end]):
            offset = head + old_start
            edits.append(TextEdit(edit.start + offset, edit.end + offset, edit.text))
    return edits


def patch_text(text: Text, target: str) -> None:
    """Edit ``text`` in place until it reads ``target``."""
    old = str(text)
    edits = text_edits(old, target)
    if not edits:
        return
    with text.doc.transaction():
        for edit, (start, end) in reversed(list(zip(edits, _byte_ranges(old, edits), strict=True))):
            # From the end, so the offsets of the edits before stay valid.
            if end > start:
                del text[start:end]
            if edit.text:
                text.insert(start, edit.text)


def patch_notebook(
    notebook: YNotebook,
    target: Mapping[str, Any],
    *,
    unchanged: Collection[str] = frozenset(),
    current_ids: Sequence[str] | None = None,
) -> None:
    """Edit the shared notebook in place until ``notebook.get()`` equals ``target``.

    ``target`` is nbformat 4 JSON with multiline strings joined. Cells without ids (before
    nbformat 4.5) are matched by position. ``unchanged`` names cells the caller knows the
    document already holds as the target has them (a merge compared them): they are not
    read again, which on a long notebook is most of the work; ``current_ids``, the document's
    cell ids in order when the caller has just read them, spares reading them once more.
    """
    with notebook.ydoc.transaction():
        meta: Map = notebook.ydoc.get("meta", type=Map)
        for key in ("nbformat", "nbformat_minor"):
            if not _same(meta.get(key), target[key]):
                meta[key] = target[key]
        metadata = meta.get("metadata")
        if isinstance(metadata, Map):
            _patch_map(metadata, target.get("metadata", {}))
        else:
            meta["metadata"] = Map(dict(target.get("metadata", {})))
        _patch_cells(notebook, target["cells"], unchanged, current_ids)


def _patch_cells(
    notebook: YNotebook,
    cells: list[Mapping[str, Any]],
    unchanged: Collection[str],
    current_ids: Sequence[str] | None,
) -> None:
    """Delete the cells the target lacks or moved, insert the missing ones, update the rest."""
    ycells: Array = notebook.ycells
    by_id = all(isinstance(cell.get("id"), str) for cell in cells)
    if by_id:
        read = current_ids if current_ids is not None else (ycell.get("id") for ycell in ycells)
        current: list[Any] = list(read)
        wanted: list[Any] = [cell["id"] for cell in cells]
    else:
        current = list(range(len(ycells)))
        wanted = list(range(len(cells)))
        unchanged = frozenset()
    matcher = SequenceMatcher(None, current, wanted, autojunk=False)
    kept = {
        i for block in matcher.get_matching_blocks() for i in range(block.a, block.a + block.size)
    }
    current_cells = _cells_to_compare(ycells, [i for i in kept if current[i] not in unchanged])
    for index in reversed(range(len(current))):
        if index not in kept:
            del ycells[index]
    kept_indices = sorted(kept)
    position = 0
    for index, cell in enumerate(cells):
        if position < len(kept_indices) and current[kept_indices[position]] == wanted[index]:
            if wanted[index] in unchanged or _unchanged(
                current_cells(kept_indices[position]), cell
            ):
                pass
            elif not _patch_cell(ycells[index], cell):
                del ycells[index]
                ycells.insert(index, notebook.create_ycell(dict(cell)))
            position += 1
        else:
            ycells.insert(index, notebook.create_ycell(dict(cell)))


def _cells_to_compare(ycells: Array, indices: list[int]) -> Callable[[int], Mapping[str, Any]]:
    """The shared cells at ``indices`` as read, by index: each one in one JSON read when they
    are few (one changed cell of a long notebook), else every cell in one read."""
    if len(indices) * _READ_ALL_PAST > len(ycells):
        every: list[Mapping[str, Any]] = read_shared(ycells)
        return every.__getitem__
    read = {index: read_shared(ycells[index]) for index in indices}
    return read.__getitem__


def _unchanged(current: Mapping[str, Any], cell: Mapping[str, Any]) -> bool:
    """Whether a shared cell (as read) already is the target, so a one-cell change to a long
    notebook touches one cell."""
    return _same(
        {key: value for key, value in current.items() if key not in _CELL_KEYS_KEPT},
        {key: value for key, value in cell.items() if key not in _CELL_KEYS_KEPT},
    )


def _patch_cell(ycell: Map, cell: Mapping[str, Any]) -> bool:
    """Update one shared cell part by part; False when it must be replaced whole.

    A cell whose type changes is replaced: the frontend builds a different model per type.
    """
    if ycell.get("cell_type") != cell.get("cell_type"):
        return False
    source = ycell.get("source")
    metadata = ycell.get("metadata")
    if not isinstance(source, Text) or not isinstance(metadata, Map):
        return False
    patch_text(source, _joined(cell.get("source", "")))
    _patch_map(metadata, cell.get("metadata", {}))
    for key, value in cell.items():
        if key in _CELL_KEYS_KEPT or key in ("source", "metadata", "cell_type"):
            continue
        if key == "outputs":
            _patch_outputs(ycell, value)
        elif key not in ycell or not _same(_plain(ycell[key]), value):
            ycell[key] = value
    for key in list(ycell.keys()):
        if key not in cell and key not in _CELL_KEYS_KEPT:
            del ycell[key]
    return True


def _patch_outputs(ycell: Map, outputs: list[dict[str, Any]]) -> None:
    """Keep the outputs the cell already shows, append the rest; else replace them all."""
    youtputs = ycell.get("outputs")
    if not isinstance(youtputs, Array):
        ycell["outputs"] = Array([_output_map(output) for output in outputs])
        return
    current = [_plain(youtput) for youtput in youtputs]
    shown = len(current)
    if shown > len(outputs) or not all(map(_same, current, outputs[:shown])):
        youtputs.clear()
        shown = 0
    if shown < len(outputs):
        youtputs.extend([_output_map(output) for output in outputs[shown:]])


def _output_map(output: Mapping[str, Any]) -> Map:
    """An output as the shared schema holds it: a stream's text is shared text."""
    shared = json.loads(json.dumps(output))
    if shared.get("output_type") == "stream":
        shared["text"] = Text(_joined(shared.get("text", "")))
    return Map(shared)


def _patch_map(shared: Map, target: Mapping[str, Any]) -> None:
    """Set the keys whose value differs, delete the keys the target lacks."""
    for key in list(shared.keys()):
        if key not in target:
            del shared[key]
    for key, value in target.items():
        if key not in shared or not _same(_plain(shared[key]), value):
            shared[key] = value


def patch_map_to(shared: Map, target: Mapping[str, Any]) -> None:
    """Bring a shared map to ``target``, whose values may be shared values of another document:
    keys whose value's JSON differs are set to a copy, keys the target lacks are deleted."""
    for key in list(shared.keys()):
        if key not in target:
            del shared[key]
    for key, value in target.items():
        if key not in shared or json_key(shared[key]) != json_key(value):
            shared[key] = copy_in(value)


def patch_array_to(array: Array, target: Sequence[Any]) -> None:
    """Bring a shared array to ``target`` (values as for ``patch_map_to``), elements matched by
    their JSON: only the elements that differ are touched, and an element replaced by one of
    the same shape (a map by a map) is patched in place, so clients keep what refers to it."""
    current = [json_key(element) for element in array]
    wanted = [json_key(element) for element in target]
    matcher = SequenceMatcher(None, current, wanted, autojunk=False)
    opcodes = [opcode for opcode in matcher.get_opcodes() if opcode[0] != "equal"]
    # Copies are made before anything changes: a target value may be an element of this array.
    copies = {j: copy_in(target[j]) for _, _, _, j1, j2 in opcodes for j in range(j1, j2)}
    for tag, i1, i2, j1, j2 in reversed(opcodes):
        if (
            tag == "replace"
            and i2 - i1 == j2 - j1
            and all(
                isinstance(array[i], Map) and isinstance(target[j], Map | Mapping)
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            )
        ):
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                patch_map_to(array[i], dict(target[j].items()))
            continue
        if i2 > i1:
            del array[i1:i2]
        for offset, j in enumerate(range(j1, j2)):
            array.insert(i1 + offset, copies[j])


def json_key(value: Any) -> str:
    """A value's JSON as a document reads it back (whole numbers as ints), keys sorted: what
    patches and merges compare shared and plain values by."""
    if isinstance(value, Text):
        return json.dumps(str(value))
    if isinstance(value, Map | Array):
        return json.dumps(read_shared(value), sort_keys=True)
    return json.dumps(as_read_back(value), sort_keys=True)


def copy_in(value: Any) -> Any:
    """A value to insert into a document: shared values copied with their shape (a map of
    texts stays one), plain values as they are."""
    if isinstance(value, Text):
        return Text(str(value))
    if isinstance(value, Map):
        return Map({key: copy_in(item) for key, item in value.items()})
    if isinstance(value, Array):
        return Array([copy_in(item) for item in value])
    return value


def _plain(value: Any) -> Any:
    """A shared value as JSON data (shared types read out, everything else as it is)."""
    if isinstance(value, Map | Array | Text):
        return value.to_py()
    return value


def _same(first: Any, second: Any) -> bool:
    """JSON equality where ``2.0`` (how Yjs gives numbers back) equals ``2`` but not ``True``.

    Equal exactly when the two values dump to the same JSON once whole floats are ints, but
    compared in place: dumping both sides of every cell of a long notebook costs far more.
    """
    if isinstance(first, bool) or isinstance(second, bool):
        return first is second
    if isinstance(first, int | float) and isinstance(second, int | float):
        return first == second or (first != first and second != second)  # NaN dumps as NaN
    if isinstance(first, Mapping):
        return (
            isinstance(second, Mapping)
            and len(first) == len(second)
            and all(key in second and _same(value, second[key]) for key, value in first.items())
        )
    if isinstance(first, list | tuple):
        return (
            isinstance(second, list | tuple)
            and len(first) == len(second)
            and all(map(_same, first, second))
        )
    return type(first) is type(second) and first == second


def _joined(text: str | list[str]) -> str:
    return text if isinstance(text, str) else "".join(text)


def _common_prefix(first: str, second: str) -> int:
    """How many leading characters ``first`` and ``second`` share (binary search on slices)."""
    low, high = 0, min(len(first), len(second))
    while low < high:
        middle = (low + high + 1) // 2
        if first[:middle] == second[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _refined(old: str, new: str) -> list[TextEdit]:
    """Character edits within one changed run of lines (positions relative to the run)."""
    if not old or not new or len(old) > REFINE_LIMIT or len(new) > REFINE_LIMIT:
        return [TextEdit(0, len(old), new)]
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    return [
        TextEdit(i1, i2, new[j1:j2])
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _byte_ranges(text: str, edits: list[TextEdit]) -> list[tuple[int, int]]:
    """Each edit's range in UTF-8 bytes of ``text``, counted in one pass over the edits."""
    ranges = []
    char_at = byte_at = 0
    for edit in edits:
        start = byte_at + len(text[char_at : edit.start].encode("utf-8"))
        end = start + len(text[edit.start : edit.end].encode("utf-8"))
        ranges.append((start, end))
        char_at, byte_at = edit.end, end
    return ranges
