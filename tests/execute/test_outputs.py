"""iopub messages into nbformat outputs: canned messages through the pure handler."""

from __future__ import annotations

from typing import Any

import nbformat

from ganymede.execute.outputs import CellOutputs, DisplayRegistry, apply_terminal_controls


def cell_outputs(displays: DisplayRegistry | None = None) -> CellOutputs:
    return CellOutputs([], displays or DisplayRegistry())


def stream(name: str, text: str) -> tuple[str, dict[str, Any]]:
    return "stream", {"name": name, "text": text}


def display(text: str, display_id: str | None = None) -> tuple[str, dict[str, Any]]:
    content: dict[str, Any] = {"data": {"text/plain": text}, "metadata": {}}
    if display_id:
        content["transient"] = {"display_id": display_id}
    return "display_data", content


def feed(cell: CellOutputs, *messages: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    for msg_type, content in messages:
        cell.handle(msg_type, content)
    cell.finish()
    return cell.outputs


def valid(outputs: list[dict[str, Any]]) -> bool:
    code = nbformat.v4.new_code_cell("x", outputs=outputs, execution_count=1)
    notebook = nbformat.v4.new_notebook(cells=[code])
    nbformat.validate(notebook)
    return True


def test_streams_of_one_name_join_and_others_break_the_run() -> None:
    outputs = feed(
        cell_outputs(),
        stream("stdout", "a\n"),
        stream("stdout", "b\n"),
        stream("stderr", "oops\n"),
        stream("stdout", "c\n"),
    )
    assert outputs == [
        {"output_type": "stream", "name": "stdout", "text": "a\nb\n"},
        {"output_type": "stream", "name": "stderr", "text": "oops\n"},
        {"output_type": "stream", "name": "stdout", "text": "c\n"},
    ]
    assert valid(outputs)


def test_carriage_returns_keep_the_last_frame_across_messages() -> None:
    outputs = feed(
        cell_outputs(),
        stream("stdout", "10%\r"),
        stream("stdout", "50%\r"),
        stream("stdout", "100%\ndone\n"),
    )
    assert outputs[0]["text"] == "100%\ndone\n"


def test_controls_apply_across_message_boundaries() -> None:
    outputs = feed(
        cell_outputs(),
        stream("stdout", "a"),
        stream("stdout", "b\r"),
        stream("stdout", "c"),
        stream("stdout", "\nxy"),
        stream("stdout", "\x08z\n"),
        stream("stdout", "50%\r"),
        stream("stdout", "75%"),
    )
    assert outputs[0]["text"] == "c\nxz\n75%"


def test_a_long_line_in_many_messages_is_kept_whole() -> None:
    pieces = [stream("stdout", "x" * 400) for _ in range(1000)]
    outputs = feed(cell_outputs(), *pieces, stream("stdout", "\n"))
    assert outputs[0]["text"] == "x" * 400_000 + "\n"


def test_terminal_controls() -> None:
    assert apply_terminal_controls("abc\rxy\n") == "xy\n"
    assert apply_terminal_controls("line\r\n") == "line\r\n"
    assert apply_terminal_controls("abx\x08c\n") == "abc\n"
    assert apply_terminal_controls("pending\r") == "pending\r"


def test_execute_input_sets_the_count_and_results_carry_it() -> None:
    cell = cell_outputs()
    outputs = feed(
        cell,
        ("execute_input", {"code": "1", "execution_count": 7}),
        ("execute_result", {"data": {"text/plain": "1"}, "metadata": {}, "execution_count": 7}),
    )
    assert cell.execution_count == 7
    assert outputs == [
        {
            "output_type": "execute_result",
            "data": {"text/plain": "1"},
            "metadata": {},
            "execution_count": 7,
        }
    ]
    assert valid(outputs)


def test_error_output() -> None:
    outputs = feed(
        cell_outputs(),
        ("error", {"ename": "ValueError", "evalue": "bad", "traceback": ["t1", "t2"]}),
    )
    assert outputs == [
        {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": ["t1", "t2"]}
    ]
    assert valid(outputs)


def test_clear_output_now_and_deferred() -> None:
    assert feed(cell_outputs(), stream("stdout", "a\n"), ("clear_output", {"wait": False})) == []
    outputs = feed(
        cell_outputs(),
        stream("stdout", "one\n"),
        ("clear_output", {"wait": True}),
        stream("stdout", "two\n"),
    )
    assert outputs == [{"output_type": "stream", "name": "stdout", "text": "two\n"}]


def test_deferred_clear_with_no_next_output_keeps_the_last_frame() -> None:
    outputs = feed(cell_outputs(), display("frame"), ("clear_output", {"wait": True}))
    assert [output["data"]["text/plain"] for output in outputs] == ["frame"]


def test_update_display_rewrites_every_output_of_the_id_in_every_cell() -> None:
    displays = DisplayRegistry()
    first, second = cell_outputs(displays), cell_outputs(displays)
    feed(first, display("v1", "d"), display("other", "e"))
    feed(second, display("v1 again", "d"))
    update = {"data": {"text/plain": "v2"}, "metadata": {"m": 1}, "transient": {"display_id": "d"}}
    feed(second, ("update_display_data", update))
    assert [o["data"]["text/plain"] for o in first.outputs] == ["v2", "other"]
    assert second.outputs == [
        {"output_type": "display_data", "data": {"text/plain": "v2"}, "metadata": {"m": 1}}
    ]
    assert valid(first.outputs)


def test_update_of_an_unknown_id_adds_nothing() -> None:
    update = {"data": {"text/plain": "v2"}, "metadata": {}, "transient": {"display_id": "x"}}
    assert feed(cell_outputs(), ("update_display_data", update)) == []


def test_messages_that_are_not_outputs_are_ignored() -> None:
    assert feed(cell_outputs(), ("comm_open", {}), ("status", {"execution_state": "busy"})) == []
