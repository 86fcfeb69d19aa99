"""Notebooks.read and Notebooks.results on real files, and from an open room's document."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest

from ganymede.core import Notebooks
from ganymede.errors import InvalidNotebook, NotebookNotFound, PathError
from ganymede.notebook.hashing import source_hash
from ganymede.notebook.results import RESULT_MIME, SCRAPBOOK_MIMES
from tests.core.disk import code, display, markdown, write_notebook


def is_plain_json(value: Any) -> bool:
    if type(value) is dict:
        return all(type(key) is str and is_plain_json(item) for key, item in value.items())
    if type(value) is list:
        return all(is_plain_json(item) for item in value)
    return value is None or type(value) in (str, int, float, bool)


def result(name: str, value: Any) -> dict[str, Any]:
    return display({RESULT_MIME: {"name": name, "value": value}, "text/plain": repr(value)})


def test_read_returns_plain_nbformat_4_and_hashes(root: Path) -> None:
    write_notebook(
        root / "n.ipynb",
        markdown("# Title", cell_id="intro"),
        code("x = 1\nprint(x)", cell_id="first"),
        code("", cell_id="empty"),
    )
    answer = Notebooks(root).read("n.ipynb")
    notebook = answer["notebook"]
    assert is_plain_json(answer)
    assert json.loads(json.dumps(answer)) == answer
    assert notebook["nbformat"] == 4
    assert [cell["id"] for cell in notebook["cells"]] == ["intro", "first", "empty"]
    assert answer["hashes"] == {
        "intro": source_hash("# Title"),
        "first": source_hash("x = 1\nprint(x)"),
        "empty": source_hash(""),
    }
    nbformat.validate(nbformat.from_dict(notebook))


def test_hashes_join_sources_stored_as_lines(root: Path) -> None:
    (root / "lines.ipynb").write_text(
        json.dumps(
            {
                "nbformat": 4,
                "nbformat_minor": 5,
                "metadata": {},
                "cells": [
                    {
                        "cell_type": "code",
                        "id": "c1",
                        "metadata": {},
                        "source": ["a = 1\n", "b = 2"],
                        "outputs": [],
                        "execution_count": None,
                    }
                ],
            }
        )
    )
    answer = Notebooks(root).read("lines.ipynb")
    assert answer["notebook"]["cells"][0]["source"] == "a = 1\nb = 2"
    assert answer["hashes"] == {"c1": source_hash("a = 1\nb = 2")}


def test_cells_without_ids_have_no_hashes(root: Path) -> None:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
    notebook.nbformat_minor = 4
    del notebook.cells[0]["id"]
    (root / "old.ipynb").write_text(nbformat.writes(notebook))
    answer = Notebooks(root).read("old.ipynb")
    assert answer["hashes"] == {}
    assert answer["notebook"]["cells"][0]["source"] == "1"


def test_unicode_content_and_names(root: Path) -> None:
    write_notebook(root / "données" / "été.ipynb", markdown("# Été ☀️ 夏", cell_id="m"))
    answer = Notebooks(root).read("/données/été.ipynb")
    assert answer["notebook"]["cells"][0]["source"] == "# Été ☀️ 夏"
    assert answer["hashes"] == {"m": source_hash("# Été ☀️ 夏")}


def test_missing_notebook(root: Path) -> None:
    notebooks = Notebooks(root)
    with pytest.raises(NotebookNotFound, match=r"sub/missing\.ipynb: no such file"):
        notebooks.read("sub/missing.ipynb")
    with pytest.raises(NotebookNotFound):
        notebooks.results("missing.ipynb")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "not JSON"),
        (b'{"cells": [', "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b'{"cells": []}', "no nbformat key"),
        (b'{"nbformat": 4, "nbformat_minor": 5, "cells": "nope", "metadata": {}}', "not a list"),
    ],
)
def test_invalid_notebooks(root: Path, content: bytes, reason: str) -> None:
    (root / "bad.ipynb").write_bytes(content)
    notebooks = Notebooks(root)
    for call in (notebooks.read, notebooks.results):
        with pytest.raises(InvalidNotebook, match=reason) as caught:
            call("bad.ipynb")
        assert caught.value.path == "bad.ipynb"


def test_a_directory_is_not_a_notebook(root: Path) -> None:
    (root / "dir.ipynb").mkdir()
    with pytest.raises(InvalidNotebook, match="a directory"):
        Notebooks(root).read("dir.ipynb")


def test_escapes_are_refused_and_nothing_outside_is_read(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_notebook(outside / "secret.ipynb", markdown("# Secret"))
    (root / "link.ipynb").symlink_to(outside / "secret.ipynb")
    (root / "elsewhere").symlink_to(outside, target_is_directory=True)
    notebooks = Notebooks(root)
    for path in (
        "../outside/secret.ipynb",
        "a/../../outside/secret.ipynb",
        "link.ipynb",
        "elsewhere/secret.ipynb",
    ):
        for call in (notebooks.read, notebooks.results):
            with pytest.raises(PathError):
                call(path)
    with pytest.raises(NotebookNotFound):
        notebooks.read(str(outside / "secret.ipynb"))  # an absolute path names a file inside


def test_results_of_a_file(root: Path) -> None:
    write_notebook(
        root / "run.ipynb",
        code("result('rows', 3)", result("rows", 3)),
        markdown("text"),
        code(
            "glue",
            display({SCRAPBOOK_MIMES[0]: {"name": "mean", "data": 2.5, "encoder": "json"}}),
            result("rows", 4),
        ),
    )
    assert Notebooks(root).results("run.ipynb") == {"mean": 2.5, "rows": 4}


def test_results_of_a_notebook_without_any(root: Path) -> None:
    write_notebook(root / "n.ipynb", code("1"))
    assert Notebooks(root).results("n.ipynb") == {}


class Rooms:
    """What a server hands in: the open rooms' notebooks by API path."""

    def __init__(self, documents: dict[str, dict[str, Any]]) -> None:
        self.documents = documents
        self.asked: list[str] = []

    def __call__(self, api_path: str) -> dict[str, Any] | None:
        self.asked.append(api_path)
        return self.documents.get(api_path)


def live_document(source: str, value: Any) -> dict[str, Any]:
    notebook = nbformat.v4.new_notebook(cells=[code(source, result("live", value), cell_id="c")])
    return json.loads(json.dumps(notebook))  # sources as strings, as jupyter_ydoc hands them


def test_an_open_room_wins_over_the_file(root: Path) -> None:
    write_notebook(root / "n.ipynb", code("saved", result("live", 1), cell_id="c"))
    write_notebook(root / "other.ipynb", code("other", cell_id="o"))
    rooms = Rooms({"n.ipynb": live_document("unsaved edit", 2)})
    notebooks = Notebooks(root, open_document=rooms)
    answer = notebooks.read("/n.ipynb")
    assert answer["notebook"]["cells"][0]["source"] == "unsaved edit"
    assert answer["hashes"] == {"c": source_hash("unsaved edit")}
    assert notebooks.results("n.ipynb") == {"live": 2}
    assert notebooks.read("other.ipynb")["hashes"] == {"o": source_hash("other")}
    assert rooms.asked == ["n.ipynb", "n.ipynb", "other.ipynb"]


def test_a_room_whose_file_is_not_saved_yet(root: Path) -> None:
    rooms = Rooms({"new.ipynb": live_document("fresh", 5)})
    notebooks = Notebooks(root, open_document=rooms)
    assert notebooks.read("new.ipynb")["notebook"]["cells"][0]["source"] == "fresh"
    assert notebooks.results("new.ipynb") == {"live": 5}


def test_rooms_are_not_asked_about_paths_that_escape(root: Path) -> None:
    rooms = Rooms({"../x.ipynb": live_document("never", 0)})
    with pytest.raises(PathError):
        Notebooks(root, open_document=rooms).read("../x.ipynb")
    assert rooms.asked == []


needs_permissions = pytest.mark.skipif(os.geteuid() == 0, reason="file modes do not restrict root")


@needs_permissions
def test_an_unreadable_notebook(root: Path) -> None:
    notebook = write_notebook(root / "locked.ipynb")
    notebook.chmod(0)
    with pytest.raises(InvalidNotebook, match="cannot be read"):
        Notebooks(root).read("locked.ipynb")


@needs_permissions
def test_an_unreadable_directory_is_listed_as_an_error_and_skipped_by_search(root: Path) -> None:
    write_notebook(root / "locked" / "n.ipynb", code("needle"))
    write_notebook(root / "open.ipynb", code("needle"))
    (root / "locked").chmod(0)
    try:
        notebooks = Notebooks(root)
        with pytest.raises(PathError, match="permission denied"):
            notebooks.list("locked")
        assert [hit["path"] for hit in notebooks.search("needle")["hits"]] == ["open.ipynb"]
    finally:
        (root / "locked").chmod(0o755)
