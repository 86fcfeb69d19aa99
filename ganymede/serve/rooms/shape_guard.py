"""The shape a client edit may not take a notebook room out of: one the room can save.

A Yjs update can be well formed and still give the notebook values nbformat 4 has no place
for: a cell with no ``cell_type``, a ``source`` that is not text, ``metadata`` that is not a map,
``outputs`` that are not a list of outputs, format fields that are not whole numbers. The room
would take it, and then fail to save or read the notebook. JupyterLab never sends such an edit;
the room refuses it: the update is undone whole, in a transaction of its own that every client
receives, so the sender's other changes go with it and no other client's are touched.

A cell passes when its JSON form, what the room writes, passes nbformat's cell schema
(``check_cell``, the one files are read with), and its parts are of the shared types every
frontend binds to: a map for the cell, text for its source, a map for its metadata, an array
for its outputs. That is how JupyterLab and jupyter_ydoc make every cell; a raw or markdown
cell has no outputs, and may have attachments. A key nbformat has no place for in the cell is
refused when the update sets it (nbformat's own validator rejects such a file).

Only what an update touched is checked, so a check costs in proportion to the edit, not to the
notebook: typing in a source or changing metadata checks nothing, a cell inserted, a cell's own
key set or its outputs changed checks that cell, a key of ``meta`` set checks ``meta``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import Array, Map, MapEvent, Text, TextEvent, UndoManager

from ganymede.notebook.schema import SchemaProblem, check_cell
from ganymede.serve.rooms.document import read_shared

FORMAT_KEYS = ("nbformat", "nbformat_minor")
NBFORMAT_MAJOR = 4
FIRST_MINOR_WITH_IDS = 5
# The origin of a client update's transaction: the undo manager keeps only those.
CLIENT_UPDATE = "ganymede-client-update"
# The keys nbformat 4.5 allows in a cell of each type, and execution_state, which JupyterLab and
# jupyter_ydoc keep beside them (it is not saved).
_EVERY_CELL = {"id", "cell_type", "source", "metadata", "execution_state"}
CELL_KEYS = {
    "code": frozenset({*_EVERY_CELL, "outputs", "execution_count"}),
    "markdown": frozenset({*_EVERY_CELL, "attachments"}),
    "raw": frozenset({*_EVERY_CELL, "attachments"}),
}
# The parts of a cell frontends bind to as shared types (jupyter_ydoc's and JupyterLab's cells
# alike): an editor to the source, observers to the metadata and the outputs.
SHARED_PARTS: dict[str, tuple[type[Text | Map | Array[Any]], str]] = {
    "source": (Text, "shared text"),
    "metadata": (Map, "a shared map"),
    "outputs": (Array, "a shared array"),
}


class ShapeGuard:
    """Applies client updates to one notebook, noting what each touched, and undoes one that
    leaves the notebook in a shape it cannot be saved in."""

    def __init__(self, notebook: YNotebook) -> None:
        self._doc = notebook.ydoc
        self._cells = notebook.ycells
        self._meta = self._doc.get("meta", type=Map)
        self._undo = UndoManager(scopes=[self._cells, self._meta], capture_timeout_millis=0)
        self._undo.include_origin(CLIENT_UPDATE)
        self._watching = False
        # Index → the keys the update set on that cell (None: all of them, a new cell or type).
        self._touched_cells: dict[int, set[str] | None] = {}
        self._meta_touched = False
        # For the document's lifetime, or until the room packs it away (``close``).
        self._subscriptions = (
            self._cells.observe_deep(self._on_cells_events),
            self._meta.observe(self._on_meta_event),
        )

    def close(self) -> None:
        """Stop watching: the document is being packed away, and a subscription would keep it
        alive (the room makes a new guard for the rebuilt one)."""
        cells_subscription, meta_subscription = self._subscriptions
        self._cells.unobserve(cells_subscription)
        self._meta.unobserve(meta_subscription)

    def apply(self, update: bytes) -> str | None:
        """Apply a client's update (ValueError if it is not one): why the notebook cannot be
        saved now, if it cannot. Call ``undo`` then, before any other change."""
        self._touched_cells.clear()
        self._meta_touched = False
        self._watching = True
        try:
            with self._doc.transaction(origin=CLIENT_UPDATE):
                self._doc.apply_update(update)
        finally:
            self._watching = False
        problem = self._problem()
        if problem is None:
            self._undo.clear()  # nothing to undo: the deleted content it keeps can go
        return problem

    def undo(self) -> None:
        """Take back the update ``apply`` found a problem with (its own transaction)."""
        self._undo.undo()
        self._undo.clear()

    def _problem(self) -> str | None:
        if self._meta_touched:
            problem = meta_problem(read_keys(self._meta, (*FORMAT_KEYS, "metadata")))
            if problem is not None:
                return problem
        if not self._touched_cells:
            return None
        minor = self._meta.get("nbformat_minor")
        ids = isinstance(minor, int | float) and minor >= FIRST_MINOR_WITH_IDS
        for index, keys_set in sorted(self._touched_cells.items()):
            problem = cell_problem(self._cells[index], ids=ids, keys_set=keys_set)
            if problem is not None:
                return f"an update leaving cell {index} unsaveable ({problem})"
        return None

    def _on_cells_events(self, events: list[Any]) -> None:
        if not self._watching:
            return
        for event in events:
            path = event.path
            if not path:
                self._touched_cells.update(dict.fromkeys(_inserted_positions(event.delta)))
            elif len(path) == 1:
                self._note_keys_set(path[0], set(event.keys))
            elif _changes_outputs(event, path):
                self._note_keys_set(path[0], set())

    def _note_keys_set(self, index: int, keys: set[str]) -> None:
        known = self._touched_cells.get(index, set())
        if known is None or "cell_type" in keys:  # a new type: all its keys must fit it
            self._touched_cells[index] = None
        else:
            self._touched_cells[index] = known | keys

    def _on_meta_event(self, event: MapEvent) -> None:
        if self._watching:
            self._meta_touched = True


def meta_problem(meta: Mapping[str, Any]) -> str | None:
    """Why the notebook's ``meta`` (its format fields and metadata) cannot be saved, if it
    cannot. Yjs keeps numbers as floats, so 4.0 is 4; metadata may be missing (it saves as {})."""
    for key in FORMAT_KEYS:
        value = meta.get(key)
        whole = isinstance(value, int | float) and not isinstance(value, bool)
        if not whole or value != int(value) or value < 0:
            return f"the update sets {key} to {value!r}, not a whole number"
    if meta["nbformat"] != NBFORMAT_MAJOR:
        return f"the update sets nbformat to {meta['nbformat']!r}, not {NBFORMAT_MAJOR}"
    metadata = meta.get("metadata", {})
    if not isinstance(metadata, Map | dict):
        return f"the update sets the notebook's metadata to {metadata!r}, not a map"
    return None


def read_keys(shared: Map, keys: tuple[str, ...]) -> dict[str, Any]:
    """Those of ``keys`` the map holds (a key set to null is held, unlike a missing one)."""
    return {key: shared[key] for key in keys if key in shared}


def cell_problem(cell: Any, *, ids: bool, keys_set: set[str] | None = None) -> str | None:
    """Why one shared cell cannot be saved or read by a frontend, if it cannot.

    Keys nbformat has no place for in a cell of its type are refused only among ``keys_set``
    (None: all), so a cell read from a file with a key of another tool's keeps taking edits.
    """
    if not isinstance(cell, Map):
        return f"a cell must be a shared map, not {type(cell).__name__}"
    for key, (kind, named) in SHARED_PARTS.items():
        if key in cell and not isinstance(cell[key], kind):
            return f"{key} must be {named}"
    try:
        check_cell(read_shared(cell), ids=ids)
    except SchemaProblem as problem:
        return str(problem)
    cell_type = cell["cell_type"]
    count = cell.get("execution_count") if cell_type == "code" else None  # a whole number
    if count is not None and count < 0:  # the reader takes it; nbformat's validator does not
        return f"execution_count {count:g} is below 0"
    keys = set(cell.keys()) if keys_set is None else keys_set & set(cell.keys())
    unknown = sorted(keys - CELL_KEYS[cell_type])
    return f"{cell_type} cells have no {', '.join(unknown)}" if unknown else None


def _inserted_positions(delta: list[dict[str, Any]]) -> Iterator[int]:
    """Where the cells an array change inserted now stand."""
    position = 0
    for step in delta:
        if "retain" in step:
            position += step["retain"]
        elif "insert" in step:
            inserted = len(step["insert"])
            yield from range(position, position + inserted)
            position += inserted


def _changes_outputs(event: Any, path: list[Any]) -> bool:
    """A change to a cell's outputs list or to one output's keys (the text a stream output
    grows by is text whatever is typed into it)."""
    return path[1] == "outputs" and len(path) <= 3 and not isinstance(event, TextEvent)
