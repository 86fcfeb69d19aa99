"""The cells of a live notebook as agents' marks and reports compare them, read incrementally.

Every tool reply asks what changed, and every agent edit moves a mark: both need each cell's
``CellState``. Reading all of a 500-cell notebook for that costs milliseconds each time, and
mostly little changed, so the room's attribution tells which cells changed since the last look
and only those are read again; a cell whose outputs did not change keeps its outputs'
fingerprint and has only its source, type and metadata read.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pycrdt import Map

from ganymede.agent import CellState, cell_state, notebook_states
from ganymede.notebook.provenance import NAMESPACE
from ganymede.serve.rooms.document import notebook_content, read_shared
from ganymede.serve.rooms.room import DocumentRoom


@dataclass(frozen=True)
class CellsNow:
    """What a report needs of a notebook now: each cell's state, and which requests are done."""

    states: tuple[CellState, ...]
    done_requests: frozenset[str]


@dataclass(frozen=True)
class _SeenCell:
    version: int
    run_version: int
    state: CellState
    request_done: bool


class CellSnapshots:
    """Per room, the cells as last read, kept while the room lives."""

    def __init__(self) -> None:
        self._seen: weakref.WeakKeyDictionary[DocumentRoom, dict[str, _SeenCell]] = (
            weakref.WeakKeyDictionary()
        )

    def now(self, room: DocumentRoom, content: Mapping[str, Any] | None = None) -> CellsNow:
        """The room's cells now. ``content``, the notebook's content if the caller read it
        already, spares a second whole read where cells cannot be read one by one."""
        attribution = room.attribution
        order = attribution.order() if attribution is not None else []
        known = self._seen.get(room)
        if known is not None and list(known) == order:
            assert attribution is not None  # cells were read one by one
            if all(
                seen.version == attribution.cell_version(cell_id) for cell_id, seen in known.items()
            ):  # nothing changed since: answered without the document (one packed stays so)
                return _cells_now(known)
        notebook = room.document.notebook
        if (
            attribution is None
            or len(set(order)) != len(order)  # ids missing or shared: the content renames them
            or len(order) != len(notebook.ycells)
        ):
            whole = notebook_content(notebook) if content is None else content
            return CellsNow(notebook_states(whole), done_requests(whole.get("cells") or []))
        if known is None and content is not None:
            cells = content.get("cells") or []
            if [cell.get("id") for cell in cells] == order:
                return self._first_look(room, order, cells)
        known = known or {}
        fresh: dict[str, _SeenCell] = {}
        for index, cell_id in enumerate(order):
            version = attribution.cell_version(cell_id)
            seen = known.get(cell_id)
            if seen is None or seen.version != version:
                seen = _read_cell(
                    notebook.ycells[index], seen, version, attribution.run_version(cell_id)
                )
            fresh[cell_id] = seen
        self._seen[room] = fresh
        return _cells_now(fresh)

    def _first_look(
        self, room: DocumentRoom, order: list[str], cells: Sequence[Mapping[str, Any]]
    ) -> CellsNow:
        """A room not looked at before (one just opened again) whose content the caller read
        already: the states from that content, a fraction of reading each cell again."""
        attribution = room.attribution
        assert attribution is not None  # the caller checked
        fresh = {
            cell_id: _SeenCell(
                attribution.cell_version(cell_id),
                attribution.run_version(cell_id),
                cell_state(cell),
                request_done(cell.get("metadata")),
            )
            for cell_id, cell in zip(order, cells, strict=True)
        }
        self._seen[room] = fresh
        return _cells_now(fresh)


def _cells_now(seen_cells: Mapping[str, _SeenCell]) -> CellsNow:
    return CellsNow(
        tuple(seen.state for seen in seen_cells.values()),
        frozenset(cell_id for cell_id, seen in seen_cells.items() if seen.request_done),
    )


def _read_cell(ycell: Map, seen: _SeenCell | None, version: int, run_version: int) -> _SeenCell:
    cell_type = str(ycell.get("cell_type", ""))
    if seen is not None and seen.run_version == run_version and seen.state.cell_type == cell_type:
        metadata = ycell.get("metadata")
        state = CellState(seen.state.id, cell_type, str(ycell.get("source", "")), seen.state.run)
        done = request_done(read_shared(metadata) if isinstance(metadata, Map) else metadata)
        return _SeenCell(version, run_version, state, done)
    cell = read_shared(ycell)
    return _SeenCell(version, run_version, cell_state(cell), request_done(cell.get("metadata")))


def done_requests(cells: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """Ids of the cells whose request an agent marked done."""
    return frozenset(str(cell.get("id")) for cell in cells if request_done(cell.get("metadata")))


def request_done(metadata: Any) -> bool:
    """Whether a cell's metadata marks its request done (``ganymede.request.done``)."""
    section = metadata.get(NAMESPACE) if isinstance(metadata, Mapping) else None
    request = section.get("request") if isinstance(section, Mapping) else None
    return isinstance(request, Mapping) and bool(request.get("done"))
