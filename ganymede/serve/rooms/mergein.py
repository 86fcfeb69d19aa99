"""Merging another program's change to a room's file into the room's live document.

The room keeps ``base``, the bytes it last read from or wrote to its file. When the file holds
something else, ``merge_file_change`` merges three ways (base, the room's document, the file)
with the notebook's cell-by-cell rules or, for text files, line by line; a document of a
registered type (a chat, a CAD model) is merged root by root (``ganymede.notebook.threeway``):
its file's versions are loaded into scratch documents of its class, and each map merges key by
key, each array element by element, each text line by line. ``apply_merge`` then brings the
document to the result with small updates, so clients typing meanwhile keep their cursors and
keystrokes, and a client connected throughout never sees content doubled. The room does the
I/O and decides what to save.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pycrdt import Array, Map, Text

from ganymede.errors import InvalidNotebook
from ganymede.notebook.merge import Conflict, merge_notebooks, merge_text
from ganymede.notebook.nbio import NBFORMAT_MAJOR
from ganymede.notebook.threeway import Side, merge_keys, merge_sequences
from ganymede.serve.rooms.document import DocumentKind, RoomDocument, content_roots
from ganymede.serve.rooms.patch import (
    json_key,
    patch_array_to,
    patch_map_to,
    patch_notebook,
    patch_text,
)

TEXT_CONFLICT = Conflict(None, "text", "both changed the same lines; the file's lines win")


@dataclass(frozen=True)
class FileMerge:
    """The merged content, the parts the file won over the room's changes, and what moved."""

    content: dict[str, Any] | str | RootTargets
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
    if document.kind.registered:
        return _merge_registered(document, base, theirs, path)
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
    elif isinstance(merge.content, RootTargets):
        patch_roots(document, merge.content)
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


RootTarget = str | dict[str, Any] | list[Any]
"""What one root is to become: a text's string, a map's values, an array's elements (values
are the room's own or the file's scratch document's, copied in where they are missing)."""


@dataclass(frozen=True)
class RootTargets:
    """A registered type's merged roots, by name."""

    roots: dict[str, RootTarget]


def patch_roots(document: RoomDocument, targets: RootTargets) -> None:
    """Bring each root of the document to its target; the caller opens the transaction."""
    roots = content_roots(document.shared)
    for name, target in targets.roots.items():
        root = roots.get(name)
        if isinstance(root, Text) and isinstance(target, str):
            patch_text(root, target)
        elif isinstance(root, Map) and isinstance(target, dict):
            patch_map_to(root, target)
        elif isinstance(root, Array) and isinstance(target, list):
            patch_array_to(root, target)


def restore_roots(document: RoomDocument, before: RoomDocument) -> None:
    """Bring a registered type's document back to what ``before`` (a copy of it) holds."""
    targets: dict[str, RootTarget] = {}
    for name, root in content_roots(before.shared).items():
        targets[name] = _whole(root)
    patch_roots(document, RootTargets(targets))


def _whole(root: Array | Map | Text) -> RootTarget:
    if isinstance(root, Text):
        return str(root)
    if isinstance(root, Map):
        return dict(root.items())
    return list(root)


def _merge_registered(document: RoomDocument, base: bytes, theirs: bytes, path: str) -> FileMerge:
    """Merge each root of a registered type's document with the file's new version.

    A base the class cannot read (it never should: it was read or written by the room) counts
    as empty, so both sides' content is kept, each part once.
    """
    theirs_roots = content_roots(document.read_version(theirs, path))
    try:
        base_roots = content_roots(document.read_version(base, path))
    except (InvalidNotebook, UnicodeDecodeError):
        base_roots = {}
    targets: dict[str, RootTarget] = {}
    conflicts: list[Conflict] = []
    room_changed = file_changed = False
    for name, ours in content_roots(document.shared).items():
        file = theirs_roots.get(name)
        if file is None or type(file) is not type(ours):
            continue  # a root the file's version lacks is the room's alone
        target, parts = _merge_root(name, base_roots.get(name), ours, file)
        conflicts.extend(
            Conflict(None, part, "both changed it; the file's version wins") for part in parts
        )
        merged = _keys_of(target)
        room_changed = room_changed or merged != _keys_of(_whole(ours))
        file_changed = file_changed or merged != _keys_of(_whole(file))
        targets[name] = target
    return FileMerge(
        content=RootTargets(targets),
        conflicts=tuple(conflicts),
        file_wins_outright=False,
        room_changed=room_changed,
        file_changed=file_changed,
    )


def _merge_root(
    name: str,
    base: Array | Map | Text | None,
    ours: Array | Map | Text,
    theirs: Array | Map | Text,
) -> tuple[RootTarget, list[str]]:
    """One root merged three ways, and the parts of it the file won over the room's change."""
    if isinstance(ours, Text):
        base_text = str(base) if isinstance(base, Text) else ""
        merged, conflicted = merge_text(base_text, str(ours), str(theirs))
        return merged, [name] if conflicted else []
    if isinstance(ours, Map):
        assert isinstance(theirs, Map)
        sides = (base if isinstance(base, Map) else {}, ours, theirs)
        keys = merge_keys(
            *({key: json_key(value) for key, value in side.items()} for side in sides)
        )
        values = {
            key: (ours if side is Side.OURS else theirs)[key] for key, side in keys.picks.items()
        }
        return values, [f"{name}.{key}" for key in keys.conflicts]
    assert isinstance(theirs, Array)
    elements = (list(base) if isinstance(base, Array) else [], list(ours), list(theirs))
    merge = merge_sequences(*([json_key(element) for element in side] for side in elements))
    picked = [elements[1 if pick.side is Side.OURS else 2][pick.index] for pick in merge.picks]
    return picked, [name] if merge.conflicted else []


def _keys_of(target: RootTarget) -> Any:
    """A root's target as comparable JSON text."""
    if isinstance(target, str):
        return target
    if isinstance(target, dict):
        return {key: json_key(value) for key, value in target.items()}
    return [json_key(value) for value in target]
