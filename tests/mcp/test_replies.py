"""What the tools say: reads with marks and changes, refused edits, runs with images."""

from __future__ import annotations

import base64

import nbformat

from ganymede.mcp.replies import (
    Reply,
    read_reply,
    refused_edit_text,
    run_reply,
    unknown_cells,
    with_changed_lines,
)

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()


def notebook() -> dict[str, object]:
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("1 + 1", id="c1"),
            nbformat.v4.new_markdown_cell("@agent look", id="m1"),
        ]
    )
    return dict(nb)


def test_a_read_shows_the_notebook_and_names_the_new_mark() -> None:
    reply = read_reply(
        {"path": "a.ipynb", "notebook": notebook(), "mark": "ab" * 8, "changes": None}
    )
    assert '@@cell {"cell_type":"code","id":"c1","index":0}' in reply.text
    assert '@@mark {"mark":"abababababababab","path":"a.ipynb"}' in reply.text


def test_a_read_since_a_mark_shows_only_the_changed_cells_and_who_changed_them() -> None:
    change = {
        "id": "m1",
        "cell_type": "markdown",
        "index": 1,
        "change": ["added", "request"],
        "by": "Thomas",
    }
    reply = read_reply(
        {"path": "a.ipynb", "notebook": notebook(), "mark": "cd" * 8, "changes": [change]}
    )
    assert '"id":"c1"' not in reply.text
    assert '@@cell {"cell_type":"markdown","id":"m1","index":1}\n@agent look' in reply.text
    assert (
        '@@change {"by":"Thomas","cell_type":"markdown","change":["added","request"]' in reply.text
    )


def test_cells_asked_for_that_do_not_exist_are_named() -> None:
    assert unknown_cells(notebook(), ["c1", 1, "zz", 7]) == ["zz", 7]


def test_a_refused_edit_shows_the_cell_now_and_who_changed_it() -> None:
    cell = {"id": "c1", "cell_type": "code", "source": "2 + 2", "index": 0, "outputs": []}
    text = refused_edit_text(
        cell, "Thomas", "cell c1 was changed by Thomas since your last read", "a.ipynb"
    )
    assert "changed by Thomas" in text and "2 + 2" in text and "Redo your edit" in text


def test_a_run_keeps_images_apart_and_says_when_it_is_still_running() -> None:
    output = nbformat.v4.new_output(
        "display_data", data={"image/png": PNG, "text/plain": "<Figure>"}
    )
    cell = {"id": "c1", "cell_type": "code", "source": "plot()", "outputs": [output], "index": 0}
    reply = run_reply("a.ipynb", {"finished": False, "cells": [cell]}, "python")
    assert reply.images and reply.images[0].data.startswith(b"\x89PNG")
    assert '"ref":"notebook://a.ipynb#c1/outputs/0"' in reply.text
    assert "Still running" in reply.text


def test_changed_lines_end_the_reply() -> None:
    line = '@@changed 1 cell by Thomas since your last read: call notebook_read(since: "x")'
    assert with_changed_lines(Reply("done\n"), [line]).text == f"done\n\n{line}\n"
    assert with_changed_lines(Reply("done\n"), []).text == "done\n"
