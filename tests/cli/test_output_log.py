"""--log-output's rendering of iopub messages and its per-notebook line prefixes."""

from __future__ import annotations

from typing import Any

import pytest

from ganymede.cli.output_log import LinePrefixer, message_text


@pytest.mark.parametrize(
    ("msg_type", "content", "text"),
    [
        ("stream", {"name": "stdout", "text": "a\nb"}, "a\nb"),
        ("error", {"traceback": ["\x1b[31mTrace\x1b[0m", "ZeroDivisionError"]},
         "Trace\nZeroDivisionError\n"),
        ("execute_result", {"data": {"text/plain": "42", "text/html": "<b>42</b>"}}, "42\n"),
        ("display_data", {"data": {"image/png": "..."}}, ""),
        ("clear_output", {"wait": False}, ""),
        ("execute_input", {"code": "1 + 1"}, ""),
    ],
)  # fmt: skip
def test_what_each_message_shows(msg_type: str, content: dict[str, Any], text: str) -> None:
    assert message_text(msg_type, content, color=False) == text


def test_color_is_kept_for_a_terminal() -> None:
    content = {"traceback": ["\x1b[31mTrace\x1b[0m"]}
    assert message_text("error", content, color=True) == "\x1b[31mTrace\x1b[0m\n"


def test_lines_are_prefixed_whole_per_notebook() -> None:
    log = LinePrefixer()
    assert log.feed("a.ipynb", "one\ntw") == "a.ipynb: one\n"
    assert log.feed("b.ipynb", "x") == ""
    assert log.feed("a.ipynb", "o\n") == "a.ipynb: two\n"
    assert log.feed("a.ipynb", "\n") == "a.ipynb: \n"
    assert log.flush("b.ipynb") == "b.ipynb: x\n"
    assert log.flush("b.ipynb") == ""
