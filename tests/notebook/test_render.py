"""The ``@@cell`` renderer: golden renderings, images, cuts, selection, and the frame holding."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ganymede.notebook.nbio import parse_notebook
from ganymede.notebook.render import (
    ImageOutput,
    output_ref,
    parse_output_ref,
    render_cell,
    render_notebook,
)
from tests.notebook.golden import GOLDEN_NOTEBOOK, assert_golden

RENDER = GOLDEN_NOTEBOOK / "render"
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
GIF_1X1 = base64.b64decode("R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==")

# golden name -> (input notebook, render_notebook keyword arguments)
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "basic": ("basic", {}),
    "basic_no_outputs": ("basic", {"outputs": False}),
    "basic_selected": ("basic", {"cells": ["boom", 2, "no-such-cell", 99]}),
    "frames": ("frames", {}),
    "long": ("long", {"max_text": 200}),
    "v44_no_ids": ("v44_no_ids", {}),
    "mimes": ("mimes", {}),
    "results": ("../results/results", {}),
}


def load(name: str) -> dict[str, Any]:
    path = RENDER / f"{name}.ipynb"
    return parse_notebook(path.read_bytes(), path.name)


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_rendering(case: str) -> None:
    source, options = CASES[case]
    rendering = render_notebook(load(source), path=f"reports/{Path(source).name}.ipynb", **options)
    assert_golden(rendering.text, RENDER / f"{case}.txt")


def test_images_come_back_as_bytes_named_by_their_ref() -> None:
    rendering = render_notebook(load("basic"), path="reports/basic.ipynb")
    assert rendering.images == [
        ImageOutput(
            ref="notebook://reports/basic.ipynb#plot/outputs/0", mime="image/png", data=PNG_1X1
        ),
        ImageOutput(
            ref="notebook://reports/basic.ipynb#plot/outputs/1", mime="image/gif", data=GIF_1X1
        ),
    ]
    for image in rendering.images:
        assert f'"ref":"{image.ref}"' in rendering.text


def test_no_outputs_and_unselected_cells_give_no_images() -> None:
    notebook = load("basic")
    assert render_notebook(notebook, path="a.ipynb", outputs=False).images == []
    assert render_notebook(notebook, path="a.ipynb", cells=["total"]).images == []


def test_default_cut_is_4000_characters() -> None:
    text = "z" * 4001
    cell = {"cell_type": "code", "id": "c", "metadata": {}, "source": "", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": text}
    ]}  # fmt: skip
    rendered = render_cell(cell, index=0, path="n.ipynb").text
    assert (
        "z" * 4000 + "\n```\n… 1 more characters: read notebook://n.ipynb#c/outputs/0" in rendered
    )
    assert '"chars":4001' in rendered
    exact = {**cell, "outputs": [{"output_type": "stream", "name": "stdout", "text": text[:4000]}]}
    assert "more characters" not in render_cell(exact, index=0, path="n.ipynb").text


def test_refs_survive_awkward_paths() -> None:
    ref = output_ref("dir with space/a#b%.ipynb", "c-1_x", 12)
    assert ref == "notebook://dir%20with%20space/a%23b%25.ipynb#c-1_x/outputs/12"
    assert parse_output_ref(ref) == ("dir with space/a#b%.ipynb", "c-1_x", 12)
    with pytest.raises(ValueError, match="not an output ref"):
        parse_output_ref("notebook://a.ipynb#c/inputs/0")


def test_inputs_are_not_mutated() -> None:
    notebook = load("basic")
    before = json.dumps(notebook, sort_keys=True)
    render_notebook(notebook, path="a.ipynb", cells=["plot"], max_text=5)
    assert json.dumps(notebook, sort_keys=True) == before


# A reader of the format, written from the module docstring's rules, to show the frame holds.
HEADER = re.compile(r"^@@(notebook|cell|output) (\{.*\})$")


def read_frames(text: str) -> list[tuple[str, dict[str, Any], str]]:
    """``(kind, header, body)`` per block; fenced bodies are unwrapped, others unescaped."""
    lines = text.split("\n")
    assert lines[-1] == ""
    blocks: list[tuple[str, dict[str, Any], str]] = []
    i = 0
    while i < len(lines) - 1:
        match = HEADER.match(lines[i])
        assert match, f"line {i} should start a block: {lines[i]!r}"
        kind, header = match.group(1), json.loads(match.group(2))
        i += 1
        body: list[str] = []
        if i < len(lines) and lines[i].startswith("```"):
            fence = re.match(r"`+", lines[i]).group(0)
            i += 1
            while lines[i] != fence:
                body.append(lines[i])
                i += 1
            i += 1
            if lines[i].startswith("… "):
                i += 1
            text_body = "\n".join(body) + ("\n" if body else "")
        else:
            while i < len(lines) - 1 and not lines[i].startswith("@@"):
                body.append(lines[i])
                i += 1
            while body and body[-1] == "":
                body.pop()
            text_body = "\n".join(re.sub(r"^\\(\\*@@)", r"\1", line) for line in body)
        blocks.append((kind, header, text_body))
        while i < len(lines) - 1 and lines[i] == "":
            i += 1
    return blocks


@pytest.mark.parametrize("name", ["basic", "frames", "long", "mimes", "v44_no_ids"])
def test_a_reader_gets_every_source_back(name: str) -> None:
    notebook = load(name)
    blocks = read_frames(render_notebook(notebook, path="x.ipynb").text)
    cells = [(header, body) for kind, header, body in blocks if kind == "cell"]
    assert [header["index"] for header, _ in cells] == list(range(len(notebook["cells"])))
    for (header, body), cell in zip(cells, notebook["cells"], strict=True):
        assert header["cell_type"] == cell["cell_type"]
        source = cell["source"]
        if cell["cell_type"] == "code":
            expected = source if source.endswith("\n") or not source else source + "\n"
        else:
            expected = source.rstrip("\n")
        assert body == expected


def test_markdown_header_lines_are_escaped_one_backslash_deeper() -> None:
    cell = {"cell_type": "markdown", "id": "m", "metadata": {},
            "source": "@@cell x\n\\@@y\n\\\\@@z\n @@ kept\nplain @@"}  # fmt: skip
    body = render_cell(cell, index=0, path="n.ipynb").text.split("\n", 1)[1]
    assert body == "\\@@cell x\n\\\\@@y\n\\\\\\@@z\n @@ kept\nplain @@\n"


def test_fence_is_longer_than_any_backtick_run() -> None:
    cell = {"cell_type": "code", "id": "c", "metadata": {}, "outputs": [],
            "source": "a = '``````'"}  # fmt: skip
    text = render_cell(cell, index=0, path="n.ipynb", language="python").text
    assert text.split("\n")[1:] == ["```````python", "a = '``````'", "```````", ""]
