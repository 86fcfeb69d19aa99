"""Turning a kernel's iopub messages into nbformat outputs, as JupyterLab shows them.

Pure logic: the runner hands each message's type and content to the cell's ``CellOutputs``,
and calls its ``finish`` once the cell is done; the outputs end up exactly as a person watching
the run in JupyterLab would have seen them (streams joined, carriage returns applied, deferred
clears, displays updated in place). ``OutputRules`` holds those rules once, for any
``OutputSink``: ``CellOutputs`` here, the room's Y structures in the execute endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


def apply_terminal_controls(text: str) -> str:
    """Text as a terminal leaves it: ``\\r`` rewinds the line, backspace erases a character.

    Progress bars (tqdm and the like) redraw one line thousands of times; without this a
    headless run would store every frame in the notebook. Linear in the text's length: a single
    400 KB line must not cost a regex's backtracking.
    """
    if "\r" in text:
        text = "\n".join(_after_last_rewind(line) for line in text.split("\n"))
    if "\b" in text:
        text = "\n".join(_erase_backspaced(line) for line in text.split("\n"))
    return text


def _after_last_rewind(line: str) -> str:
    """What stays of one line after its ``\\r`` rewinds (a trailing ``\\r`` waits for more)."""
    body = line.rstrip("\r")
    rewind = body.rfind("\r")
    return line if rewind < 0 else line[rewind + 1 :]


def _erase_backspaced(line: str) -> str:
    kept: list[str] = []
    for character in line:
        if character == "\b":
            if kept and kept[-1] != "\b":
                kept.pop()
            else:
                kept.append(character)
        else:
            kept.append(character)
    return "".join(kept)


def display_output(
    msg_type: str, content: Mapping[str, Any], execution_count: int | None
) -> dict[str, Any]:
    """The output a ``display_data`` or ``execute_result`` message adds (its count, if missing,
    is the cell's)."""
    output: dict[str, Any] = {
        "output_type": msg_type,
        "data": dict(content.get("data", {})),
        "metadata": dict(content.get("metadata", {})),
    }
    if msg_type == "execute_result":
        output["execution_count"] = content.get("execution_count", execution_count)
    return output


def error_output(content: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "output_type": "error",
        "ename": content.get("ename", ""),
        "evalue": content.get("evalue", ""),
        "traceback": list(content.get("traceback", [])),
    }


def display_id_of(content: Mapping[str, Any]) -> str | None:
    """The display id a message names; outputs carrying one can be updated later."""
    display_id = (content.get("transient") or {}).get("display_id")
    return str(display_id) if display_id else None


class _OpenStream:
    """The stream output that is still receiving text.

    Its text is kept in pieces and joined once, when the stream closes: a cell printing in
    thousands of small messages must cost time in proportion to what it prints, not to its
    square. Only the last line stays open to ``\r`` and backspace (they never reach past a
    newline), so finished lines are settled as they arrive.
    """

    def __init__(self, output: dict[str, Any]) -> None:
        self.output = output
        self._settled: list[str] = []
        self._open_line: list[str] = []

    def append(self, text: str) -> None:
        if "\n" not in text and "\r" not in text and "\b" not in text:
            self._open_line.append(text)
            return
        text = apply_terminal_controls("".join(self._open_line) + text)
        line_start = text.rfind("\n") + 1
        self._settled.append(text[:line_start])
        self._open_line = [text[line_start:]]

    def close(self) -> None:
        open_line = apply_terminal_controls("".join(self._open_line))
        self.output["text"] = "".join(self._settled) + open_line

    def settle(self) -> None:
        """Write the text so far into the output, leaving the stream open (for a save mid-cell).

        The settled pieces are joined into one, so settling every few seconds stays linear.
        """
        self._settled = ["".join(self._settled)]
        self.close()


class DisplayRegistry:
    """Every output of a run that carries a display id, so an update can rewrite all of them.

    ``update_display_data`` targets outputs by ``transient.display_id``, also in cells that
    finished earlier, so one registry lives for the whole run. It holds the output dicts
    themselves: an update rewrites them in place, and an output a clear removed from its cell is
    simply no longer seen.
    """

    def __init__(self) -> None:
        self._outputs: dict[str, list[dict[str, Any]]] = {}

    def register(self, display_id: str, output: dict[str, Any]) -> None:
        self._outputs.setdefault(display_id, []).append(output)

    def update(self, display_id: str, data: Mapping[str, Any], metadata: Mapping[str, Any]) -> None:
        for output in self._outputs.get(display_id, []):
            output["data"] = dict(data)
            output["metadata"] = dict(metadata)


class OutputSink(Protocol):
    """Where one cell's outputs are kept: nbformat dicts (``CellOutputs``) or a room's Y
    structures. ``OutputRules`` decides what each message does; a sink only does it."""

    @property
    def execution_count(self) -> int | None: ...

    def set_execution_count(self, count: int) -> None: ...

    def add(self, output: dict[str, Any], display_id: str | None) -> None:
        """Append a whole output (the open stream, if any, is done)."""

    def start_stream(self, name: str, text: str) -> None:
        """Append a stream output holding ``text``, open to more."""

    def extend_stream(self, text: str) -> bool:
        """Add to the stream started last; False if it is gone or no longer the last output."""

    def clear(self) -> None: ...

    def update_display(self, display_id: str, content: Mapping[str, Any]) -> None: ...


class OutputRules:
    """What each iopub message of a cell's execution does to its outputs, as JupyterLab's output
    area does it: consecutive streams of one name join, ``clear_output(wait=True)`` waits for
    the next output, ``update_display_data`` rewrites every output showing that display id."""

    def __init__(self, sink: OutputSink) -> None:
        self.sink = sink
        self._clear_before_next_output = False
        self._stream_name: str | None = None

    def handle(self, msg_type: str, content: Mapping[str, Any]) -> None:
        if msg_type == "stream":
            self._add_stream(str(content.get("name", "stdout")), str(content.get("text", "")))
        elif msg_type in ("display_data", "execute_result"):
            output = display_output(msg_type, content, self.sink.execution_count)
            self._add(output, display_id_of(content))
        elif msg_type == "error":
            self._add(error_output(content), None)
        elif msg_type == "update_display_data":
            display_id = display_id_of(content)
            if display_id:
                self.sink.update_display(display_id, content)
        elif msg_type == "clear_output":
            if content.get("wait"):
                self._clear_before_next_output = True
            else:
                self._clear()
        elif msg_type == "execute_input" and content.get("execution_count") is not None:
            self.sink.set_execution_count(int(content["execution_count"]))

    def _add_stream(self, name: str, text: str) -> None:
        joins = self._stream_name == name and not self._clear_before_next_output
        if joins and self.sink.extend_stream(text):
            return
        self._clear_if_deferred()
        self.sink.start_stream(name, text)
        self._stream_name = name

    def _add(self, output: dict[str, Any], display_id: str | None) -> None:
        self._clear_if_deferred()
        self.sink.add(output, display_id)
        self._stream_name = None

    def _clear_if_deferred(self) -> None:
        if self._clear_before_next_output:
            self._clear()

    def _clear(self) -> None:
        self._clear_before_next_output = False
        self._stream_name = None
        self.sink.clear()


class CellOutputs:
    """The outputs of one cell as nbformat dicts, built from its execution's iopub messages."""

    def __init__(self, outputs: list[dict[str, Any]], displays: DisplayRegistry) -> None:
        self.outputs = outputs
        self.displays = displays
        self.execution_count: int | None = None
        self._stream: _OpenStream | None = None
        self._rules = OutputRules(self)

    def handle(self, msg_type: str, content: Mapping[str, Any]) -> None:
        """Apply one iopub message (of this cell's execution) to the outputs."""
        self._rules.handle(msg_type, content)

    def finish(self) -> None:
        """Settle the outputs once the cell's messages are all in (or will never come)."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def settle(self) -> None:
        """Bring the outputs up to date for a save while the cell still runs."""
        if self._stream is not None:
            self._stream.settle()

    def set_execution_count(self, count: int) -> None:
        self.execution_count = count

    def add(self, output: dict[str, Any], display_id: str | None) -> None:
        self.finish()
        self.outputs.append(output)
        if display_id:
            self.displays.register(display_id, output)

    def start_stream(self, name: str, text: str) -> None:
        output = {"output_type": "stream", "name": name, "text": ""}
        self.add(output, None)
        self._stream = _OpenStream(output)
        self._stream.append(text)

    def extend_stream(self, text: str) -> bool:
        if self._stream is None:
            return False
        self._stream.append(text)
        return True

    def clear(self) -> None:
        self.outputs.clear()
        self._stream = None

    def update_display(self, display_id: str, content: Mapping[str, Any]) -> None:
        self.displays.update(display_id, content.get("data", {}), content.get("metadata", {}))
