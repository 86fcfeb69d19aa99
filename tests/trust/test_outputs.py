"""A kernel's rich iopub message and the notebook output a frontend makes of it fingerprint
alike; made-up data does not; the server's memory of them stays bounded."""

from __future__ import annotations

from typing import Any

import pytest

from ganymede.trust.outputs import (
    KernelOutputs,
    bundle_fingerprint,
    message_fingerprint,
    output_fingerprint,
    rich_fingerprints,
)

HTML = "<div>table</div><script>draw()</script>"
DATA = {"text/html": HTML, "text/plain": "<Table>", "image/png": "iVBORw0KGgo=\n"}

# (iopub message type, its content, the output JupyterLab writes into the notebook of it)
AS_JUPYTERLAB_WRITES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "display_data",
        {"data": DATA, "metadata": {}, "transient": {"display_id": "d1"}},
        {"output_type": "display_data", "data": DATA, "metadata": {}},
    ),
    (
        "execute_result",
        {"data": DATA, "metadata": {}, "execution_count": 3},
        {"output_type": "execute_result", "data": DATA, "metadata": {}, "execution_count": 3},
    ),
    (
        "update_display_data",  # the update's data replaces that of the outputs showing it
        {"data": DATA, "metadata": {}, "transient": {"display_id": "d1"}},
        {"output_type": "display_data", "data": DATA, "metadata": {}},
    ),
]


@pytest.mark.parametrize(("msg_type", "content", "output"), AS_JUPYTERLAB_WRITES)
def test_a_rich_message_and_the_output_made_of_it_fingerprint_alike(
    msg_type: str, content: dict[str, Any], output: dict[str, Any]
) -> None:
    fingerprint = message_fingerprint(msg_type, content)
    assert fingerprint is not None and len(fingerprint) == 16
    assert output_fingerprint(output) == fingerprint


def test_a_files_multiline_strings_fingerprint_as_the_kernels_string() -> None:
    as_saved = {
        "text/html": ["<div>table</div>", "<script>draw()</script>"],
        "text/plain": ["<Table>"],
        "image/png": "iVBORw0KGgo=\n",
    }
    assert bundle_fingerprint(as_saved) == bundle_fingerprint(DATA)
    # A JSON mime's list is a JSON value, not lines.
    assert bundle_fingerprint({"application/json": ["a", "b"]}) != bundle_fingerprint(
        {"application/json": "ab"}
    )


def test_numbers_fingerprint_as_a_javascript_frontend_writes_them_back() -> None:
    sent = {"application/json": {"width": 10.0, "big": 2**60 + 1, "ratio": 0.5, "on": True}}
    read_back = {"application/json": {"on": True, "ratio": 0.5, "big": 2**60, "width": 10}}
    assert bundle_fingerprint(sent) == bundle_fingerprint(read_back)
    assert bundle_fingerprint({"application/json": {"on": 1}}) != bundle_fingerprint(
        {"application/json": {"on": True}}
    )


@pytest.mark.parametrize(
    "forged",
    [
        {**DATA, "text/html": HTML + "<script>steal()</script>"},
        {**DATA, "text/javascript": "steal()"},
        {key: value for key, value in DATA.items() if key != "image/png"},
    ],
    ids=["changed", "added", "removed"],
)
def test_other_data_fingerprints_otherwise(forged: dict[str, Any]) -> None:
    assert bundle_fingerprint(forged) != bundle_fingerprint(DATA)


def test_only_data_counts_not_output_metadata() -> None:
    shown = {"output_type": "display_data", "data": DATA, "metadata": {"isolated": True}}
    assert output_fingerprint(shown) == message_fingerprint("display_data", {"data": DATA})


@pytest.mark.parametrize(
    ("msg_type", "content"),
    [
        ("stream", {"name": "stdout", "text": "hi\n"}),
        ("error", {"ename": "E", "evalue": "v", "traceback": []}),
        ("status", {"execution_state": "idle"}),
        ("display_data", {"metadata": {}}),
        ("clear_output", {"wait": False}),
    ],
)
def test_messages_that_make_no_rich_output_have_no_fingerprint(
    msg_type: str, content: dict[str, Any]
) -> None:
    assert message_fingerprint(msg_type, content) is None


def test_rich_fingerprints_skip_streams_and_errors() -> None:
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": "hi\n"},
        {"output_type": "display_data", "data": DATA, "metadata": {}},
        {"output_type": "error", "ename": "E", "evalue": "v", "traceback": []},
    ]
    assert rich_fingerprints(outputs) == [bundle_fingerprint(DATA)]


def test_kernel_outputs_keep_the_most_recent_up_to_their_limit() -> None:
    seen = KernelOutputs(limit=2)
    first, second, third = (bundle_fingerprint({"text/html": f"<b>{n}</b>"}) for n in range(3))
    seen.add(first)
    seen.add(second)
    seen.add(first)  # sent again: the most recent now
    seen.add(third)
    assert len(seen) == 2
    assert first in seen and third in seen and second not in seen


def test_kernel_outputs_record_rich_messages_only() -> None:
    seen = KernelOutputs()
    seen.saw("stream", {"name": "stdout", "text": "<script>x</script>"})
    seen.saw("display_data", {"data": DATA, "metadata": {}})
    assert len(seen) == 1
    assert output_fingerprint({"output_type": "execute_result", "data": DATA}) in seen
