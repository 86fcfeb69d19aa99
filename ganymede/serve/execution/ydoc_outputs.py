"""Writing a cell's iopub messages into a room's notebook, shaped as jupyter_ydoc shapes outputs.

The headless runner's rules (``OutputRules``: consecutive same-name streams joined, carriage
returns and backspaces applied, ``clear_output(wait=True)`` deferred to the next output,
displays updated wherever they are shown), applied to Y structures as the messages arrive,
so every client of the room watches the run live. Outputs are Maps; a stream's ``text`` is a
Y Text that grows at its end only: JupyterLab's output model reads Text changes as
"remove the last n characters, append these", so a rewrite of the open line deletes a suffix.
The messages read together (a kernel printing faster than the room takes them in) are one
transaction, one update to the clients, their consecutive stream texts one append: each costs
about the same whatever its size. Pure document logic, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jupyter_ydoc import YNotebook
from jupyter_ydoc.utils import cast_all
from pycrdt import Array, Map, Text

from ganymede.execute.outputs import OutputRules, apply_terminal_controls
from ganymede.serve.rooms.document import RoomDocument, live_value

RUNNING = "running"
IDLE = "idle"

IopubMessage = tuple[str, Mapping[str, Any]]
"""An iopub message's type and content."""


def find_cell(notebook: YNotebook, cell_id: str) -> Map | None:
    for ycell in notebook.ycells:
        if ycell.get("id") == cell_id:
            return ycell
    return None


def cell_as_room_has_it(ycell: Map) -> dict[str, Any]:
    """A cell as JSON, ``execution_state`` included, numbers cast as jupyter_ydoc's ``get``
    casts them (Y stores the counts as floats)."""
    cell: dict[str, Any] = ycell.to_py()
    cast_all(cell, float, int)
    return cell


def start_running(ycell: Map) -> None:
    """What JupyterLab does to a cell it queues: no outputs, no count, and now running."""
    outputs = ycell.get("outputs")
    if isinstance(outputs, Array):
        outputs.clear()
    else:
        ycell["outputs"] = Array()
    ycell["execution_count"] = None
    ycell["execution_state"] = RUNNING


@dataclass
class _Shown:
    """Where an output with a display id sits, and the data it was last given.

    By the room's document, not its notebook: an update may come runs later, when the room has
    packed its idle document away and rebuilt it (``RoomDocument.shared`` is the live one)."""

    document: RoomDocument
    cell_id: str
    index: int
    data: dict[str, Any]


class RoomDisplays:
    """Every output shown with a display id on one kernel, so updates reach all of them.

    Outputs are remembered by cell id and position, with the data they were given: Y Maps have
    no identity to hold on to, and a position whose output no longer carries that data (the
    outputs were cleared or replaced since) is simply not updated.
    """

    def __init__(self) -> None:
        self._shown: dict[str, list[_Shown]] = {}

    def register(
        self,
        display_id: str,
        document: RoomDocument,
        cell_id: str,
        index: int,
        data: dict[str, Any],
    ) -> None:
        self._shown.setdefault(display_id, []).append(_Shown(document, cell_id, index, data))

    def forget_cell(self, document: RoomDocument, cell_id: str) -> None:
        """The cell's outputs were cleared: its displays are gone."""
        for display_id, places in list(self._shown.items()):
            kept = [p for p in places if not (p.document is document and p.cell_id == cell_id)]
            if kept:
                self._shown[display_id] = kept
            else:
                del self._shown[display_id]

    def update(self, display_id: str, content: Mapping[str, Any]) -> None:
        """Replace each output showing ``display_id`` with its new data, keeping its type and
        count (JupyterLab sees a replaced item in the outputs array and re-renders it)."""
        data = live_value(dict(content.get("data", {})))
        metadata = live_value(dict(content.get("metadata", {})))
        for place in self._shown.get(display_id, []):
            ycell = find_cell(place.document.notebook, place.cell_id)
            outputs = None if ycell is None else ycell.get("outputs")
            if not isinstance(outputs, Array) or place.index >= len(outputs):
                continue
            current = outputs[place.index]
            if not isinstance(current, Map) or current.get("data") != place.data:
                continue
            replacement = current.to_py() | {"data": data, "metadata": metadata}
            outputs[place.index] = Map(replacement)
            place.data = data


class _OpenStream:
    """The stream output still receiving text: its place, its Y Text, and its last line, still
    open to ``\\r`` and backspace (they never reach past a newline)."""

    def __init__(self, index: int, text: Text) -> None:
        self.index = index
        self.text = text
        self._open_line: list[str] = []  # in pieces: many small prints must not cost a square

    def append(self, text: str) -> None:
        if "\r" not in text and "\b" not in text:
            self._grow(text)
            return
        open_line = "".join(self._open_line)
        rewritten = apply_terminal_controls(open_line + text)
        kept = 0
        for old, new in zip(open_line, rewritten, strict=False):
            if old != new:
                break
            kept += 1
        dropped = len(open_line[kept:].encode("utf-8"))  # Y Text counts UTF-8 bytes
        if dropped:
            end = len(self.text)
            del self.text[end - dropped : end]
        self._open_line = [open_line[:kept]]
        self._grow(rewritten[kept:])

    def _grow(self, text: str) -> None:
        if not text:
            return
        self.text += text
        newline = text.rfind("\n")
        if newline < 0:
            self._open_line.append(text)
        else:
            self._open_line = [text[newline + 1 :]]


class RoomCellOutputs:
    """One cell's execution, written into the room's notebook (the ``OutputSink`` of the rules
    the headless runner follows too).

    The cell is found again by id when the Map held has gone (a move in JupyterLab deletes and
    re-inserts the cell); outputs for a cell deleted meanwhile go nowhere.
    """

    def __init__(self, document: RoomDocument, cell_id: str, displays: RoomDisplays) -> None:
        """``document``: the room's, which the run holds open and live."""
        self.document = document
        self.notebook = document.notebook
        self.cell_id = cell_id
        self.displays = displays
        self._ycell = find_cell(self.notebook, cell_id)
        self._stream: _OpenStream | None = None
        self._rules = OutputRules(self)

    def handle(self, messages: Sequence[IopubMessage]) -> None:
        """Apply iopub messages of this cell's execution, in order, in one transaction."""
        with self.notebook.ydoc.transaction():
            for msg_type, content in joined_streams(messages):
                self._rules.handle(msg_type, content)

    def finish(self, execution_count: int | None) -> None:
        """The cell ran: its count (when the reply has one) and the idle state."""
        with self.notebook.ydoc.transaction():
            ycell = self._cell()
            if ycell is None:
                return
            if execution_count is not None and ycell.get("execution_count") != execution_count:
                ycell["execution_count"] = execution_count
            ycell["execution_state"] = IDLE

    @property
    def execution_count(self) -> int | None:
        ycell = self._cell()
        count = None if ycell is None else ycell.get("execution_count")
        return None if count is None else int(count)

    def set_execution_count(self, count: int) -> None:
        ycell = self._cell()
        if ycell is not None:
            ycell["execution_count"] = count

    def add(self, output: dict[str, Any], display_id: str | None) -> None:
        outputs = self._outputs()
        if outputs is None:
            return
        self._stream = None
        outputs.append(Map(live_value(output)))
        if display_id:
            index = len(outputs) - 1
            self.displays.register(display_id, self.document, self.cell_id, index, output["data"])

    def start_stream(self, name: str, text: str) -> None:
        outputs = self._outputs()
        if outputs is None:
            return
        self.add({"output_type": "stream", "name": name, "text": Text()}, None)
        index = len(outputs) - 1
        self._stream = _OpenStream(index, outputs[index]["text"])
        self._stream.append(text)

    def extend_stream(self, text: str) -> bool:
        outputs = self._outputs()
        stream = self._stream
        # A client may have cleared or added outputs since: then the stream is not the last.
        if stream is None or outputs is None or len(outputs) != stream.index + 1:
            return False
        stream.append(text)
        return True

    def clear(self) -> None:
        self._stream = None
        outputs = self._outputs()
        if outputs is not None:
            outputs.clear()
        self.displays.forget_cell(self.document, self.cell_id)

    def update_display(self, display_id: str, content: Mapping[str, Any]) -> None:
        self.displays.update(display_id, content)

    def _outputs(self) -> Array | None:
        ycell = self._cell()
        if ycell is None:
            return None
        outputs = ycell.get("outputs")
        if not isinstance(outputs, Array):
            ycell["outputs"] = Array()
            outputs = ycell["outputs"]
        return outputs

    def _cell(self) -> Map | None:
        if self._ycell is None or self._ycell.get("id") != self.cell_id:
            self._ycell = find_cell(self.notebook, self.cell_id)
            self._stream = None
        return self._ycell


def joined_streams(messages: Sequence[IopubMessage]) -> Iterator[IopubMessage]:
    """The messages, each run of consecutive streams of one name joined into one.

    The same text either way: carriage returns and backspaces act on the open line, which
    a join only hands over in one piece instead of several.
    """
    pending: list[str] = []
    name = ""
    for msg_type, content in messages:
        if msg_type == "stream" and pending and content.get("name", "stdout") == name:
            pending.append(str(content.get("text", "")))
            continue
        if pending:
            yield "stream", {"name": name, "text": "".join(pending)}
            pending = []
        if msg_type == "stream":
            name = str(content.get("name", "stdout"))
            pending.append(str(content.get("text", "")))
        else:
            yield msg_type, content
    if pending:
        yield "stream", {"name": name, "text": "".join(pending)}
