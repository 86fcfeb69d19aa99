"""Notebooks.list on real directories: order, skips, titles, kernels, times, bad files."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from ganymede.core import Notebooks
from ganymede.errors import NotebookNotFound, PathError, UsageError
from tests.core.disk import code, markdown, write_notebook

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def paths(listing: list[dict[str, object]]) -> list[object]:
    return [entry["path"] for entry in listing]


def test_directories_first_then_names(root: Path) -> None:
    write_notebook(root / "b.ipynb")
    write_notebook(root / "a.ipynb")
    (root / "zeta").mkdir()
    (root / "alpha").mkdir()
    write_notebook(root / "alpha" / "inner.ipynb")
    listing = Notebooks(root).list()
    assert paths(listing) == ["alpha", "zeta", "a.ipynb", "b.ipynb"]
    kinds = [entry["type"] for entry in listing]
    assert kinds == ["directory", "directory", "notebook", "notebook"]


def test_skips_hidden_checkpoints_other_files_and_escaping_links(
    root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    write_notebook(outside / "secret.ipynb")
    write_notebook(root / "kept.ipynb")
    write_notebook(root / ".hidden.ipynb")
    write_notebook(root / ".ipynb_checkpoints" / "kept-checkpoint.ipynb")
    (root / ".git").mkdir()
    (root / "notes.txt").write_text("not a notebook")
    (root / "data.json").write_text("{}")
    (root / "secret.ipynb").symlink_to(outside / "secret.ipynb")
    (root / "elsewhere").symlink_to(outside, target_is_directory=True)
    (root / "broken.ipynb").symlink_to(root / "gone.ipynb")
    (root / "back\\slash.ipynb").write_text("{}")
    assert paths(Notebooks(root).list()) == ["kept.ipynb"]


def test_keeps_links_that_stay_inside(root: Path) -> None:
    write_notebook(root / "real" / "n.ipynb", markdown("# Real"))
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    (root / "alias.ipynb").symlink_to(root / "real" / "n.ipynb")
    listing = Notebooks(root).list()
    assert paths(listing) == ["alias", "real", "alias.ipynb"]
    assert listing[2]["title"] == "Real"
    assert paths(Notebooks(root).list("alias")) == ["alias/n.ipynb"]


def test_entries_in_a_subdirectory_carry_full_api_paths(root: Path) -> None:
    write_notebook(root / "journal" / "2026" / "day.ipynb")
    (root / "journal" / "2026" / "empty").mkdir()
    assert paths(Notebooks(root).list("/journal/2026/")) == [
        "journal/2026/empty",
        "journal/2026/day.ipynb",
    ]


def test_titles_and_kernels(root: Path) -> None:
    write_notebook(
        root / "deep.ipynb",
        code("# a comment, not a heading"),
        markdown("Intro text\n\n```\n# fenced, not a heading\n```\n### Deep title ##"),
        markdown("# Later heading"),
        kernel="deno",
    )
    write_notebook(root / "plain.ipynb", code("1"), markdown("no heading here"), kernel=None)
    write_notebook(root / "empty-heading.ipynb", markdown("#\n## Second"))
    (root / "dir").mkdir()
    by_path = {entry["path"]: entry for entry in Notebooks(root).list()}
    assert by_path["deep.ipynb"]["title"] == "Deep title"
    assert by_path["deep.ipynb"]["kernel"] == "deno"
    assert by_path["plain.ipynb"]["title"] == "plain"
    assert by_path["plain.ipynb"]["kernel"] is None
    assert by_path["empty-heading.ipynb"]["title"] == "Second"
    assert by_path["dir"]["title"] == "dir"
    assert by_path["dir"]["kernel"] is None


def test_unicode_names_and_titles(root: Path) -> None:
    write_notebook(root / "été.ipynb", markdown("# Résumé 📓"))
    (root / "données").mkdir()
    listing = Notebooks(root).list()
    assert paths(listing) == ["données", "été.ipynb"]
    assert listing[1]["title"] == "Résumé 📓"


def test_modified_is_iso_utc_with_z(root: Path) -> None:
    notebook = write_notebook(root / "n.ipynb")
    os.utime(notebook, (1_800_000_000.25, 1_800_000_000.25))
    (root / "d").mkdir()
    listing = Notebooks(root).list()
    assert all(ISO_UTC.match(str(entry["modified"])) for entry in listing)
    assert listing[1]["modified"] == "2027-01-15T08:00:00.250Z"


def test_a_bad_notebook_is_listed_with_its_stem(root: Path) -> None:
    (root / "half.ipynb").write_text('{"cells": [')
    (root / "foreign.ipynb").write_text('["a list"]')
    (root / "binary.ipynb").write_bytes(b"\xff\xfe\x00")
    (root / "wrong-cells.ipynb").write_text('{"nbformat": 4, "cells": [1, 2]}')
    write_notebook(root / "good.ipynb", markdown("# Good"))
    listing = Notebooks(root).list()
    assert [(entry["path"], entry["title"], entry["kernel"]) for entry in listing] == [
        ("binary.ipynb", "binary", None),
        ("foreign.ipynb", "foreign", None),
        ("good.ipynb", "Good", "python3"),
        ("half.ipynb", "half", None),
        ("wrong-cells.ipynb", "wrong-cells", None),
    ]


def test_an_empty_directory(root: Path) -> None:
    (root / "empty").mkdir()
    assert Notebooks(root).list("empty") == []
    assert Notebooks(root / "empty").list() == []


def test_missing_directory(root: Path) -> None:
    with pytest.raises(NotebookNotFound, match="nowhere: no such file or directory"):
        Notebooks(root).list("nowhere")


def test_a_notebook_is_not_a_directory(root: Path) -> None:
    write_notebook(root / "n.ipynb")
    with pytest.raises(UsageError, match=r"n\.ipynb: not a directory"):
        Notebooks(root).list("n.ipynb")


def test_directories_outside_the_root_are_refused(root: Path, tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    write_notebook(tmp_path / "outside" / "secret.ipynb")
    (root / "elsewhere").symlink_to(tmp_path / "outside", target_is_directory=True)
    notebooks = Notebooks(root)
    for directory in ("..", "a/../..", "elsewhere", "C:/"):
        with pytest.raises(PathError):
            notebooks.list(directory)


def test_a_missing_root_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotebookNotFound):
        Notebooks(tmp_path / "nowhere")
