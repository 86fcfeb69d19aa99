"""Jupyter widgets in a headless run: the models' state for ``metadata.widgets``, and the
Output widget's capture of what a cell prints inside ``with out:``.

A front end keeps every widget model the kernel opens and updates; a saved notebook carries
their last state (``application/vnd.jupyter.widget-state+json``) so its widget views render
without a kernel. The Output widget is the one model that needs the front end's help: while
its ``msg_id`` names a request, the outputs of that request go into the widget's ``outputs``
instead of the cell (``clear_output`` included), and the front end tells the kernel the new
``outputs``. This does what nbclient's ``store_widget_state`` and its Output widget mimic do.
Pure logic: the runner hands over each comm message and asks where each output goes.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from ganymede.execute.outputs import CellOutputs, DisplayRegistry, OutputRules

WIDGET_STATE_MIME = "application/vnd.jupyter.widget-state+json"
OUTPUT_MODEL = ("@jupyter-widgets/output", "OutputModel")
CAPTURED = frozenset({"stream", "display_data", "execute_result", "error", "clear_output"})
"""The messages an Output widget takes in place of the cell (updates stay with the display)."""


class _WidgetOutputs:
    """An Output widget's ``outputs`` as nbformat dicts: the sink its ``OutputRules`` fill."""

    def __init__(self, outputs: list[dict[str, Any]], displays: DisplayRegistry) -> None:
        self.outputs = outputs
        self.displays = displays
        self._streaming = False

    @property
    def execution_count(self) -> int | None:
        return None

    def set_execution_count(self, count: int) -> None:
        """The cell's count is the cell's: a widget's outputs keep the ones they came with."""

    def add(self, output: dict[str, Any], display_id: str | None) -> None:
        self.outputs.append(output)
        self._streaming = False
        if display_id:
            self.displays.register(display_id, output)

    def start_stream(self, name: str, text: str) -> None:
        self.add({"output_type": "stream", "name": name, "text": text}, None)
        self._streaming = True

    def extend_stream(self, text: str) -> bool:
        if not self._streaming or not self.outputs:
            return False
        last = self.outputs[-1]
        last["text"] = last["text"] + text
        return True

    def clear(self) -> None:
        self.outputs.clear()
        self._streaming = False

    def replace(self, outputs: list[dict[str, Any]]) -> None:
        self.outputs[:] = outputs
        self._streaming = False

    def update_display(self, display_id: str, content: Mapping[str, Any]) -> None:
        self.displays.update(display_id, content.get("data", {}), content.get("metadata", {}))


class _OutputWidget:
    """One Output widget model: what it has captured, and the request it captures now."""

    def __init__(self, state: dict[str, Any], displays: DisplayRegistry) -> None:
        """``state`` is the model's: its ``outputs`` becomes the list this widget fills."""
        outputs = state.get("outputs")
        self.sink = _WidgetOutputs(list(outputs) if isinstance(outputs, list) else [], displays)
        state["outputs"] = self.sink.outputs
        self.rules = OutputRules(self.sink)
        self.msg_id = ""
        self.changed = False

    def adopt(self, outputs: Any) -> None:
        """The kernel set ``outputs`` itself (``out.outputs = ...``, ``append_stdout``)."""
        self.sink.replace(list(outputs) if isinstance(outputs, (list, tuple)) else [])


class WidgetStates:
    """The widget models of one run, by comm id, as a front end would hold them.

    Only comm messages carrying ``state`` change a model (custom messages don't); a model
    whose comm the kernel closed is gone. Output widgets capture by ``msg_id``, innermost
    first: ``with outer: with inner:`` prints into ``inner``.
    """

    def __init__(self, displays: DisplayRegistry) -> None:
        self.displays = displays
        self._states: dict[str, dict[str, Any]] = {}
        self._buffers: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {}
        self._output_widgets: dict[str, _OutputWidget] = {}
        self._capturing: dict[str, list[_OutputWidget]] = {}

    def handle_comm(
        self, msg_type: str, content: Mapping[str, Any], buffers: Sequence[bytes | memoryview] = ()
    ) -> None:
        """Apply a ``comm_open``, ``comm_msg`` or ``comm_close`` the kernel sent."""
        comm_id = str(content.get("comm_id", ""))
        if msg_type == "comm_close":
            self._close(comm_id)
            return
        data = content.get("data")
        if not isinstance(data, Mapping) or not isinstance(data.get("state"), Mapping):
            return
        state = dict(data["state"])
        model = self._states.setdefault(comm_id, {})
        widget = self._output_widgets.get(comm_id)
        if widget is not None and "outputs" in state:
            widget.adopt(state.pop("outputs"))
        model.update(state)
        paths = data.get("buffer_paths") or []
        if paths:
            held = self._buffers.setdefault(comm_id, {})
            for path, buffer in zip(paths, buffers, strict=False):
                held[tuple(path)] = {
                    "data": base64.b64encode(bytes(buffer)).decode("ascii"),
                    "encoding": "base64",
                    "path": list(path),
                }
        if widget is None and (model.get("_model_module"), model.get("_model_name")) == (
            OUTPUT_MODEL
        ):
            widget = self._output_widgets[comm_id] = _OutputWidget(model, self.displays)
        if widget is not None and "msg_id" in state:
            self._capture(widget, str(state["msg_id"] or ""))

    def capturing(self, msg_id: str) -> OutputRules | None:
        """The rules of the Output widget that takes the outputs of request ``msg_id`` now."""
        stack = self._capturing.get(msg_id)
        if not stack:
            return None
        widget = stack[-1]
        widget.changed = True
        return widget.rules

    def synced_outputs(self) -> list[tuple[str, list[dict[str, Any]]]]:
        """Each Output widget's ``outputs`` changed since the last call, by comm id: what a
        front end sends back so that ``out.outputs`` in the kernel shows what was captured."""
        changed = []
        for comm_id, widget in self._output_widgets.items():
            if widget.changed:
                widget.changed = False
                changed.append((comm_id, widget.sink.outputs))
        return changed

    def metadata(self) -> dict[str, Any] | None:
        """``metadata.widgets`` for the run's models; None when the run opened none."""
        state = {}
        for comm_id, model in self._states.items():
            if "_model_name" not in model:
                continue
            entry: dict[str, Any] = {
                "model_name": model.get("_model_name"),
                "model_module": model.get("_model_module"),
                "model_module_version": model.get("_model_module_version"),
                "state": model,
            }
            buffers = self._buffers.get(comm_id)
            if buffers:
                entry["buffers"] = list(buffers.values())
            state[comm_id] = entry
        if not state:
            return None
        return {WIDGET_STATE_MIME: {"state": state, "version_major": 2, "version_minor": 0}}

    def _capture(self, widget: _OutputWidget, msg_id: str) -> None:
        if widget.msg_id:
            stack = self._capturing.get(widget.msg_id, [])
            if widget in stack:
                stack.remove(widget)
        widget.msg_id = msg_id
        if msg_id:
            self._capturing.setdefault(msg_id, []).append(widget)

    def _close(self, comm_id: str) -> None:
        widget = self._output_widgets.pop(comm_id, None)
        if widget is not None:
            self._capture(widget, "")
        self._states.pop(comm_id, None)
        self._buffers.pop(comm_id, None)


def deliver(message: Mapping[str, Any], widgets: WidgetStates, cell: CellOutputs) -> None:
    """Hand one iopub message of a cell's request to the widgets, the Output widget capturing
    it, or the cell's outputs."""
    msg_type, content = message["msg_type"], message.get("content", {})
    if msg_type in ("comm_open", "comm_msg", "comm_close"):
        widgets.handle_comm(msg_type, content, message.get("buffers") or ())
        return
    if msg_type in CAPTURED:
        rules = widgets.capturing(str(message.get("parent_header", {}).get("msg_id", "")))
        if rules is not None:
            rules.handle(msg_type, content)
            return
    cell.handle(msg_type, content)


def with_widget_state(metadata: dict[str, Any], widgets: dict[str, Any] | None) -> dict[str, Any]:
    """Notebook metadata whose widget state is the run's: an input file's saved state names
    models of an earlier kernel, which the new outputs' views no longer refer to."""
    kept = dict(metadata.get("widgets") or {})
    kept.pop(WIDGET_STATE_MIME, None)
    if widgets:
        kept.update(widgets)
    updated = {key: value for key, value in metadata.items() if key != "widgets"}
    if kept:
        updated["widgets"] = kept
    return updated
