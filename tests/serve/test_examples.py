"""The notebooks ``make serve`` shows are valid and run as they say, on a real kernel."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from ganymede.notebook.results import read_results

EXAMPLES = Path(__file__).parents[2] / "examples"
NOTEBOOKS = sorted(EXAMPLES.rglob("*.ipynb"))


def run(path: Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook, timeout=60, resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return notebook


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_examples_are_valid_notebooks_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == "python3"
    assert all(not cell.get("outputs") for cell in notebook.cells)


def test_the_report_publishes_its_named_results(tmp_path: Path) -> None:
    copy = tmp_path / "report.ipynb"
    shutil.copy(EXAMPLES / "report.ipynb", copy)
    results = read_results(run(copy).cells)
    assert set(results) == {"region", "total", "daily_mean", "best_day"}
    assert results["region"] == "north"
    assert 7 * 80 <= results["total"] <= 7 * 120
    assert 1 <= results["best_day"] <= 7


def test_the_journal_entry_runs(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    notebook = run(tmp_path / "examples" / "journal" / "2026-12-02.ipynb")
    listing = notebook.cells[2].outputs[0]["data"]["text/plain"]
    assert "report.ipynb" in listing
