"""``ganymede trust`` signs so nbformat's notary and jupyter_server agree; ``--check`` reports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.sign import NotebookNotary
from nbformat.v4 import new_code_cell, new_notebook, new_output

pytestmark = pytest.mark.slow


def ganymede(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ganymede", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )


def write_notebook(path: Path, text: str = "<b>rich</b>") -> Path:
    cell = new_code_cell("display(HTML(x))", execution_count=1)
    cell.outputs = [new_output("display_data", data={"text/html": text, "text/plain": "x"})]
    nbformat.write(new_notebook(cells=[cell]), path)
    return path


def test_sign_then_notary_trusts_the_notebook(tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "nb.ipynb")
    before = notebook.read_bytes()
    done = ganymede("trust", "nb.ipynb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "nb.ipynb: signed"
    assert NotebookNotary().check_signature(nbformat.read(notebook, as_version=4))
    assert notebook.read_bytes() == before  # signing records a signature; the file is unchanged
    again = ganymede("trust", "nb.ipynb", cwd=tmp_path)
    assert again.stdout.strip() == "nb.ipynb: already signed"


def test_check_exits_1_for_an_unsigned_notebook_and_0_once_signed(tmp_path: Path) -> None:
    write_notebook(tmp_path / "a.ipynb")
    write_notebook(tmp_path / "b.ipynb", "<i>other</i>")
    NotebookNotary().sign(nbformat.read(tmp_path / "a.ipynb", as_version=4))
    done = ganymede("trust", "--check", "--json", "a.ipynb", "b.ipynb", cwd=tmp_path)
    assert done.returncode == 1
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines == [
        {"path": "a.ipynb", "trusted": True, "signed": False},
        {"path": "b.ipynb", "trusted": False, "signed": False},
    ]
    assert ganymede("trust", "b.ipynb", cwd=tmp_path).returncode == 0
    assert ganymede("trust", "--check", "a.ipynb", "b.ipynb", cwd=tmp_path).returncode == 0


def test_a_signature_from_jupyter_trust_is_seen_by_check(tmp_path: Path) -> None:
    write_notebook(tmp_path / "nb.ipynb")
    signed = subprocess.run(
        [sys.executable, "-m", "nbformat.sign", "nb.ipynb"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert signed.returncode == 0, signed.stderr
    assert ganymede("trust", "--check", "nb.ipynb", cwd=tmp_path).returncode == 0


def test_an_invalid_file_exits_5_and_signs_nothing(tmp_path: Path) -> None:
    good = write_notebook(tmp_path / "good.ipynb")
    (tmp_path / "bad.ipynb").write_text('{"cells": [')
    done = ganymede("trust", "good.ipynb", "bad.ipynb", cwd=tmp_path)
    assert done.returncode == 5
    assert done.stderr.count("\n") == 1
    assert "bad.ipynb: not a valid notebook: not JSON" in done.stderr
    assert not NotebookNotary().check_signature(nbformat.read(good, as_version=4))


def test_a_missing_file_exits_5_with_one_line(tmp_path: Path) -> None:
    done = ganymede("trust", "--check", "nope.ipynb", cwd=tmp_path)
    assert done.returncode == 5
    assert done.stderr == "ganymede trust: error: nope.ipynb: no such file or directory\n"
