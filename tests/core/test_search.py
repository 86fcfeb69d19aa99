"""Notebooks.search over real trees of notebooks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from ganymede.core import Notebooks
from ganymede.errors import NotebookNotFound, PathError, UsageError
from tests.core.disk import code, display, error, markdown, raw, stream, write_notebook


def places(answer: dict[str, Any]) -> list[tuple[str, int, str]]:
    return [(hit["path"], hit["index"], hit["in"]) for hit in answer["hits"]]


def test_a_hit_carries_where_and_what(root: Path) -> None:
    write_notebook(
        root / "journal" / "day.ipynb",
        markdown("# Monday notes", cell_id="head"),
        code("sales = load()\n# The weekday drop again\nplot(sales)", cell_id="c1"),
    )
    answer = Notebooks(root).search("WEEKDAY   drop")
    assert answer == {
        "hits": [
            {
                "path": "journal/day.ipynb",
                "title": "Monday notes",
                "index": 1,
                "id": "c1",
                "cell_type": "code",
                "in": "source",
                "excerpt": "# The weekday drop again",
            }
        ],
        "total": 1,
        "truncated": False,
    }


def test_hits_are_ordered_by_path_then_index(root: Path) -> None:
    write_notebook(root / "b.ipynb", code("x"), code("no"), code("x again"))
    write_notebook(root / "a" / "z.ipynb", code("x"))
    write_notebook(root / "a.ipynb", markdown("x"))
    write_notebook(root / "a-b.ipynb", code("xx"))
    assert places(Notebooks(root).search("x")) == [
        ("a-b.ipynb", 0, "source"),
        ("a.ipynb", 0, "source"),
        ("a/z.ipynb", 0, "source"),
        ("b.ipynb", 0, "source"),
        ("b.ipynb", 2, "source"),
    ]


def test_one_hit_per_cell_and_place(root: Path) -> None:
    write_notebook(
        root / "n.ipynb",
        code("needle\nneedle\nneedle", stream("needle\nneedle\n")),
    )
    assert places(Notebooks(root).search("needle")) == [("n.ipynb", 0, "source")]
    assert places(Notebooks(root).search("needle", outputs=True)) == [
        ("n.ipynb", 0, "source"),
        ("n.ipynb", 0, "outputs"),
    ]


def test_outputs_are_searched_only_when_asked(root: Path) -> None:
    write_notebook(
        root / "n.ipynb",
        code("a()", stream("stream words\n")),
        code("b()", display({"text/plain": "plain words"})),
        code("c()", display({"text/markdown": "markdown words", "text/html": "<i>html</i>"})),
        code("d()", error("ValueError", "error words")),
        code("e()", display({"text/html": "<p>html words</p>"})),
    )
    notebooks = Notebooks(root)
    assert notebooks.search("words") == {"hits": [], "total": 0, "truncated": False}
    answer = notebooks.search("words", outputs=True)
    assert places(answer) == [("n.ipynb", index, "outputs") for index in range(4)]
    assert [hit["excerpt"] for hit in answer["hits"]] == [
        "stream words",
        "plain words",
        "markdown words",
        "ValueError: error words",
    ]
    assert places(notebooks.search("valueerror", outputs=True)) == [("n.ipynb", 3, "outputs")]


def test_cell_type_filters(root: Path) -> None:
    write_notebook(root / "n.ipynb", markdown("term"), code("term"), raw("term"))
    notebooks = Notebooks(root)
    for index, kind in enumerate(("markdown", "code", "raw")):
        answer = notebooks.search("term", cell_type=kind)
        assert places(answer) == [("n.ipynb", index, "source")]
        assert answer["hits"][0]["cell_type"] == kind
    assert notebooks.search("term")["total"] == 3


def test_limit_and_truncation(root: Path) -> None:
    for number in range(5):
        write_notebook(root / f"n{number}.ipynb", code("hit"), code("hit"))
    notebooks = Notebooks(root)
    answer = notebooks.search("hit", limit=3)
    assert places(answer) == [
        ("n0.ipynb", 0, "source"),
        ("n0.ipynb", 1, "source"),
        ("n1.ipynb", 0, "source"),
    ]
    assert answer["total"] == 10
    assert answer["truncated"] is True
    exact = notebooks.search("hit", limit=10)
    assert len(exact["hits"]) == 10
    assert exact["truncated"] is False
    assert len(notebooks.search("hit")["hits"]) == 10


@pytest.mark.parametrize("limit", [0, -1, 501, True, "5", 2.5])
def test_bad_limits(root: Path, limit: Any) -> None:
    with pytest.raises(UsageError, match="limit"):
        Notebooks(root).search("x", limit=limit)


def test_limit_bounds_are_accepted(root: Path) -> None:
    write_notebook(root / "n.ipynb", code("x"))
    notebooks = Notebooks(root)
    assert notebooks.search("x", limit=1)["total"] == 1
    assert notebooks.search("x", limit=500)["total"] == 1


def test_bad_queries_and_cell_types(root: Path) -> None:
    notebooks = Notebooks(root)
    with pytest.raises(UsageError, match="empty"):
        notebooks.search("  \n ")
    with pytest.raises(UsageError, match="cell_type"):
        notebooks.search("x", cell_type="heading")


def test_long_lines_give_a_centred_excerpt(root: Path) -> None:
    line = "left " * 60 + "THE MATCH" + " right" * 60
    write_notebook(root / "n.ipynb", code(f"first line\n{line}\nlast line"))
    (hit,) = Notebooks(root).search("the match")["hits"]
    excerpt = hit["excerpt"]
    assert excerpt.startswith("…")
    assert excerpt.endswith("…")
    assert "THE MATCH" in excerpt
    assert 150 <= len(excerpt) <= 162
    assert "\n" not in excerpt


def test_skips_hidden_checkpoints_invalid_and_escaping(root: Path, tmp_path: Path) -> None:
    write_notebook(root / "kept.ipynb", code("needle"))
    write_notebook(root / ".hidden" / "h.ipynb", code("needle"))
    write_notebook(root / ".ipynb_checkpoints" / "kept-checkpoint.ipynb", code("needle"))
    write_notebook(root / "sub" / ".h.ipynb", code("needle"))
    (root / "bad.ipynb").write_text('{"cells": [{"source": "needle"')
    (root / "foreign.ipynb").write_text('{"needle": true}')
    (root / "needle.txt").write_text("needle")
    write_notebook(tmp_path / "outside" / "o.ipynb", code("needle"))
    (root / "elsewhere").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / "o.ipynb").symlink_to(tmp_path / "outside" / "o.ipynb")
    assert places(Notebooks(root).search("needle")) == [("kept.ipynb", 0, "source")]


def test_links_inside_the_root_and_loops(root: Path) -> None:
    write_notebook(root / "real" / "n.ipynb", code("needle"))
    (root / "real" / "up").symlink_to(root, target_is_directory=True)
    assert places(Notebooks(root).search("needle")) == [("real/n.ipynb", 0, "source")]


def test_search_within_a_directory(root: Path) -> None:
    write_notebook(root / "journal" / "2026" / "a.ipynb", code("needle"))
    write_notebook(root / "journal" / "b.ipynb", code("needle"))
    write_notebook(root / "other" / "c.ipynb", code("needle"))
    notebooks = Notebooks(root)
    assert places(notebooks.search("needle", dir="/journal/")) == [
        ("journal/2026/a.ipynb", 0, "source"),
        ("journal/b.ipynb", 0, "source"),
    ]
    assert notebooks.search("needle", dir="other")["total"] == 1


def test_bad_directories(root: Path, tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (root / "elsewhere").symlink_to(tmp_path / "outside", target_is_directory=True)
    notebooks = Notebooks(root)
    with pytest.raises(NotebookNotFound):
        notebooks.search("x", dir="nowhere")
    for directory in ("..", "journal/../..", "elsewhere"):
        with pytest.raises(PathError):
            notebooks.search("x", dir=directory)


def test_unicode_and_json_escaped_files(root: Path) -> None:
    write_notebook(root / "été.ipynb", markdown("# Été"), code("# Température en été"))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('été "quoted" a/b')])
    (root / "escaped.ipynb").write_text(json.dumps(notebook, ensure_ascii=True))
    notebooks = Notebooks(root)
    answer = notebooks.search("ÉTÉ")
    assert places(answer) == [
        ("escaped.ipynb", 0, "source"),
        ("été.ipynb", 0, "source"),
        ("été.ipynb", 1, "source"),
    ]
    assert answer["hits"][2]["title"] == "Été"
    assert answer["hits"][0]["title"] == "escaped"
    assert places(notebooks.search('"quoted" a/b')) == [("escaped.ipynb", 0, "source")]


def test_an_older_nbformat_is_searched(root: Path) -> None:
    from nbformat import v3

    old = v3.new_notebook(
        worksheets=[v3.new_worksheet(cells=[v3.new_code_cell(input="old needle")])]
    )
    (root / "old.ipynb").write_text(nbformat.writes(old, version=3))
    answer = Notebooks(root).search("needle")
    assert places(answer) == [("old.ipynb", 0, "source")]


def test_an_open_room_is_searched_instead_of_its_file(root: Path) -> None:
    write_notebook(root / "n.ipynb", code("stale words"))
    write_notebook(root / "m.ipynb", code("saved words"))
    live = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# Live"), nbformat.v4.new_code_cell("fresh words")]
    )
    documents = {"n.ipynb": json.loads(json.dumps(live))}
    asked: list[str] = []

    def open_document(api_path: str) -> dict[str, Any] | None:
        asked.append(api_path)
        return documents.get(api_path)

    notebooks = Notebooks(root, open_document=open_document)
    answer = notebooks.search("words")
    assert places(answer) == [("m.ipynb", 0, "source"), ("n.ipynb", 1, "source")]
    assert answer["hits"][1]["excerpt"] == "fresh words"
    assert answer["hits"][1]["title"] == "Live"
    assert notebooks.search("stale")["total"] == 0
    assert sorted(set(asked)) == ["m.ipynb", "n.ipynb"]


def test_only_notebooks_named_as_open_ones_are_asked_for(root: Path) -> None:
    write_notebook(root / "n.ipynb", code("stale words"))
    write_notebook(root / "sub" / "n.ipynb", code("saved words"))
    write_notebook(root / "m.ipynb", code("saved words"))
    live = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("fresh words")])
    documents = {"n.ipynb": json.loads(json.dumps(live))}
    asked: list[str] = []

    def open_document(api_path: str) -> dict[str, Any] | None:
        asked.append(api_path)
        return documents.get(api_path)

    notebooks = Notebooks(root, open_document=open_document, open_names=lambda: {"n.ipynb"})
    assert [hit["excerpt"] for hit in notebooks.search("words")["hits"]] == [
        "saved words",
        "fresh words",
        "saved words",
    ]
    assert asked == ["n.ipynb", "sub/n.ipynb"]
