"""Widget comms into widget state and Output-widget captures: canned messages, pure handler."""

from __future__ import annotations

from typing import Any

from ganymede.execute.outputs import CellOutputs, DisplayRegistry
from ganymede.execute.widgets import WIDGET_STATE_MIME, WidgetStates, deliver, with_widget_state

CELL = "cell-request"


def message(msg_type: str, content: dict[str, Any], buffers: list[bytes] | None = None) -> Any:
    return {
        "msg_type": msg_type,
        "content": content,
        "parent_header": {"msg_id": CELL},
        "buffers": buffers or [],
    }


def comm_open(comm_id: str, module: str, name: str, **state: Any) -> Any:
    full = {"_model_module": module, "_model_name": name, "_model_module_version": "1.0.0"}
    data = {"state": {**full, **state}, "buffer_paths": []}
    return message("comm_open", {"comm_id": comm_id, "target_name": "jupyter.widget", "data": data})


def update(comm_id: str, **state: Any) -> Any:
    data = {"method": "update", "state": state, "buffer_paths": []}
    return message("comm_msg", {"comm_id": comm_id, "data": data})


def stream(name: str, text: str) -> Any:
    return message("stream", {"name": name, "text": text})


def run(*messages: Any) -> tuple[WidgetStates, list[dict[str, Any]]]:
    widgets = WidgetStates(DisplayRegistry())
    cell = CellOutputs([], widgets.displays)
    for item in messages:
        deliver(item, widgets, cell)
    cell.finish()
    return widgets, cell.outputs


def models(widgets: WidgetStates) -> dict[str, Any]:
    metadata = widgets.metadata()
    assert metadata is not None
    return dict(metadata[WIDGET_STATE_MIME]["state"])


def test_output_widget_takes_what_its_msg_id_names() -> None:
    widgets, outputs = run(
        comm_open("out", "@jupyter-widgets/output", "OutputModel", outputs=[], msg_id=""),
        stream("stdout", "before\n"),
        update("out", msg_id=CELL),
        stream("stdout", "inside "),
        stream("stdout", "still\n"),
        message("display_data", {"data": {"text/plain": "'shown'"}, "metadata": {}}),
        update("out", msg_id=""),
        stream("stdout", "after\n"),
    )
    assert outputs == [{"output_type": "stream", "name": "stdout", "text": "before\nafter\n"}]
    state = models(widgets)["out"]["state"]
    assert state["msg_id"] == ""
    assert state["outputs"] == [
        {"output_type": "stream", "name": "stdout", "text": "inside still\n"},
        {"output_type": "display_data", "data": {"text/plain": "'shown'"}, "metadata": {}},
    ]
    assert widgets.synced_outputs() == [("out", state["outputs"])]
    assert widgets.synced_outputs() == []


def test_clear_output_inside_the_widget_clears_the_widget_not_the_cell() -> None:
    widgets, outputs = run(
        comm_open("out", "@jupyter-widgets/output", "OutputModel", outputs=[], msg_id=""),
        stream("stdout", "cell\n"),
        update("out", msg_id=CELL),
        stream("stdout", "first\n"),
        message("clear_output", {"wait": False}),
        stream("stdout", "second\n"),
        message("clear_output", {"wait": True}),
        update("out", msg_id=""),
        update("out", msg_id=CELL),
        stream("stdout", "third\n"),
        update("out", msg_id=""),
    )
    assert outputs == [{"output_type": "stream", "name": "stdout", "text": "cell\n"}]
    state = models(widgets)["out"]["state"]
    assert state["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "third\n"}]


def test_nested_output_widgets_capture_innermost_first() -> None:
    widgets, outputs = run(
        comm_open("inner", "@jupyter-widgets/output", "OutputModel", outputs=[], msg_id=""),
        comm_open("outer", "@jupyter-widgets/output", "OutputModel", outputs=[], msg_id=""),
        update("inner", msg_id=CELL),
        stream("stdout", "in inner\n"),
        update("outer", msg_id=CELL),
        stream("stdout", "in outer\n"),
        update("outer", msg_id=""),
        stream("stdout", "inner again\n"),
        update("inner", msg_id=""),
    )
    assert outputs == []
    state = models(widgets)
    assert [o["text"] for o in state["inner"]["state"]["outputs"]] == ["in inner\ninner again\n"]
    assert [o["text"] for o in state["outer"]["state"]["outputs"]] == ["in outer\n"]


def test_state_follows_updates_keeps_buffers_and_forgets_closed_models() -> None:
    slider = comm_open("slider", "@jupyter-widgets/controls", "IntSliderModel", value=3)
    buffered = message(
        "comm_msg",
        {"comm_id": "image", "data": {"state": {"value": None}, "buffer_paths": [["value"]]}},
        buffers=[b"\x89PNG"],
    )
    widgets, _ = run(
        slider,
        comm_open("image", "@jupyter-widgets/controls", "ImageModel"),
        comm_open("gone", "@jupyter-widgets/controls", "LabelModel"),
        update("slider", value=7),
        message("comm_msg", {"comm_id": "slider", "data": {"method": "custom", "content": {}}}),
        buffered,
        message("comm_close", {"comm_id": "gone", "data": {}}),
    )
    state = models(widgets)
    assert set(state) == {"slider", "image"}
    assert state["slider"]["model_name"] == "IntSliderModel"
    assert state["slider"]["model_module"] == "@jupyter-widgets/controls"
    assert state["slider"]["state"]["value"] == 7
    assert state["image"]["buffers"] == [
        {"data": "iVBORw==", "encoding": "base64", "path": ["value"]}
    ]


def test_the_kernel_setting_outputs_itself_is_what_the_widget_holds() -> None:
    widgets, _ = run(
        comm_open("out", "@jupyter-widgets/output", "OutputModel", outputs=[], msg_id=""),
        update("out", outputs=[{"output_type": "stream", "name": "stdout", "text": "set\n"}]),
        update("out", msg_id=CELL),
        stream("stdout", "more\n"),
        update("out", msg_id=""),
    )
    outputs = models(widgets)["out"]["state"]["outputs"]
    assert [o["text"] for o in outputs] == ["set\n", "more\n"]


def test_a_run_without_widgets_drops_the_files_stale_state() -> None:
    stale = {"widgets": {WIDGET_STATE_MIME: {"state": {"old": {}}}}, "kernelspec": {}}
    assert with_widget_state(stale, None) == {"kernelspec": {}}
    fresh = {WIDGET_STATE_MIME: {"state": {"new": {}}, "version_major": 2, "version_minor": 0}}
    assert with_widget_state(stale, fresh) == {"kernelspec": {}, "widgets": fresh}
    other = {"widgets": {"application/other+json": 1, WIDGET_STATE_MIME: {}}}
    assert with_widget_state(other, None) == {"widgets": {"application/other+json": 1}}
    assert WidgetStates(DisplayRegistry()).metadata() is None
