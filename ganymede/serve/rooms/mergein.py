"""Merging another program's change to a room's file into the room's live document.

The room keeps ``base``, the bytes it last read from or wrote to its file. When the file holds
something else, ``merge_file_change`` merges three ways (base, the room's document, the file)
with the notebook's cell-by-cell rules or, for text files, line by line; ``apply_merge`` then
brings the document to the result with small updates, so clients typing meanwhile keep their
cursors and keystrokes. The room does the I/O and decides what to save.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pycrdt import Text

from ganymede.notebook.merge import Conflict, merge_notebooks, merge_text
from ganymede.notebook.nbio import NBFORMAT_MAJOR
from ganymede.serve.rooms.document import DocumentKind, RoomDocument
from ganymede.serve.rooms.patch import patch_notebook, patch_text

TEXT_CONFLICT = Conflict(None, "text", "both changed the same lines; the file's lines win")


@dataclass(frozen=True)
class FileMerge:
    """The merged content, the parts the file won over the room's changes, and what moved."""

    content: dict[str, Any] | str
    conflicts: tuple[Conflict, ...]
    file_wins_outright: bool
    room_changed: bool  # the document must be brought to ``content``
    file_changed: bool  # the file lacks something of ``content``: the room saves
    same_in_room: frozenset[str] = frozenset()  # ids of cells the document already has as merged
    room_ids: tuple[str, ...] | None = None  # the document's cell ids when the merge read it


def merge_file_change(document: RoomDocument, base: bytes, theirs: bytes, path: str) -> FileMerge:
    """Merge the file's new bytes into the document since ``base`` (nothing is changed).

    InvalidNotebook or UnicodeDecodeError when ``theirs`` cannot be read (a half-written file).
    """
    if document.kind is DocumentKind.NOTEBOOK:
        return _merge_notebook(document, base, theirs, path)
    theirs_text = document.parse(theirs, path)
    ours = str(document.content())
    merged, conflicted = merge_text(document.parse(base, path), ours, theirs_text)
    return FileMerge(
        content=merged,
        conflicts=(TEXT_CONFLICT,) if conflicted else (),
        file_wins_outright=False,
        room_changed=merged != ours,
        file_changed=merged != theirs_text,
    )


def apply_merge(document: RoomDocument, merge: FileMerge) -> None:
    """Bring the document to the merged content; the caller opens the transaction."""
    if isinstance(merge.content, str):
        patch_text(document.doc.get("source", type=Text), merge.content)
    else:
        patch_notebook(
            document.shared,  # type: ignore[arg-type]
            document.as_shown(merge.content),
            unchanged=merge.same_in_room,
            current_ids=merge.room_ids,
        )


def _merge_notebook(document: RoomDocument, base: bytes, theirs: bytes, path: str) -> FileMerge:
    # The base first: the file's new bytes, parsed last, are the next merge's base.
    base_notebook = document.parse(base, path)
    theirs_notebook = document.parse(theirs, path)
    ours = document.content()
    sides = (base_notebook, ours, theirs_notebook)
    before_version_4 = (
        document.declared_major(data, path) < NBFORMAT_MAJOR for data in (base, theirs)
    )
    if any(before_version_4):
        # An nbformat 1-3 file is upgraded on every read with fresh cell ids, which match
        # nothing: without its ids every side has none, and the file wins outright.
        result = merge_notebooks(*(_without_cell_ids(notebook) for notebook in sides))
    else:
        fingerprints = (
            document.fingerprints(base, path),
            None,
            document.fingerprints(theirs, path),
        )
        result = merge_notebooks(*sides, fingerprints=fingerprints)
    room_ids = [cell.get("id") for cell in ours["cells"]]
    # Ids the read left out (before nbformat 4.5, or a cell the document invented and its
    # content leaves out) are read from the document itself when the merge is applied.
    known_ids = len(room_ids) == len(document.shared.ycells)  # type: ignore[attr-defined]
    known_ids = known_ids and all(isinstance(cell_id, str) for cell_id in room_ids)
    return FileMerge(
        content=result.notebook,
        conflicts=result.conflicts,
        file_wins_outright=result.file_wins_outright,
        room_changed=result.room_changed,
        file_changed=result.file_changed,
        same_in_room=result.same_in_room,
        # Read along with the merge, so applying it need not read them again.
        room_ids=tuple(room_ids) if known_ids else None,
    )


def _without_cell_ids(notebook: Mapping[str, Any]) -> dict[str, Any]:
    cells = [
        {key: value for key, value in cell.items() if key != "id"} for cell in notebook["cells"]
    ]
    return {**notebook, "cells": cells}
