"""``ganymede history``: a file's points and the file as it was, read with no server running."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_ydoc import YNotebook

from ganymede.fileid import FileIdStore
from ganymede.history import HistoryStore, NewPoint, PointKind
from ganymede.history.files import format_time

pytestmark = pytest.mark.slow

# 2026-12-01 12:00:00 UTC and the minutes after it.
START = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC).timestamp()


def ganymede(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ganymede", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    """A notebook whose history holds its load and two edits by Ann, a minute apart each, and
    the room's bookkeeping after each."""
    path = tmp_path / "nb.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("a = 1")]), path)
    file_ids = FileIdStore(tmp_path)
    file_id = file_ids.index("nb.ipynb")
    file_ids.close()
    shared = YNotebook()
    updates: list[bytes] = []
    shared.ydoc.observe(lambda event: updates.append(event.update))
    shared.set(nbformat.reads(path.read_text(), as_version=4))
    for text in (" # one", " # two"):
        source = shared.ycells[0]["source"]
        source += text
        shared.ystate["dirty"] = False
    kinds = [PointKind.LOAD, PointKind.EDIT, PointKind.STATE, PointKind.EDIT, PointKind.STATE]
    assert len(updates) == len(kinds)
    who = ["file", "Ann", "ganymede", "Ann", "ganymede"]
    points = [
        NewPoint(file_id, "epoch", START + 60 * (i // 2 + i % 2), who[i], kind, update)
        for i, (kind, update) in enumerate(zip(kinds, updates, strict=True))
    ]
    store = HistoryStore(clock=lambda: START + 600)
    store.append(points)
    store.close()
    return path


def test_the_list_shows_each_point_who_and_when(notebook: Path) -> None:
    done = ganymede("history", "nb.ipynb", cwd=notebook.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"#1\t{format_time(START)}\tload\tfile",
        f"#2\t{format_time(START + 60)}\tedit\tAnn",
        f"#3\t{format_time(START + 120)}\tedit\tAnn",
    ]
    as_json = ganymede("history", "nb.ipynb", "--json", cwd=notebook.parent)
    lines = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [(line["number"], line["who"], line["kind"]) for line in lines] == [
        (1, "file", "load"),
        (2, "Ann", "edit"),
        (3, "Ann", "edit"),
    ]


def test_at_a_number_or_a_time_writes_the_file_as_it_was(notebook: Path) -> None:
    out = notebook.parent / "then.ipynb"
    done = ganymede("history", "nb.ipynb", "--at", "#2", "-o", str(out), cwd=notebook.parent)
    assert done.returncode == 0, done.stderr
    assert [c.source for c in nbformat.read(out, as_version=4).cells] == ["a = 1 # one"]
    moment = datetime.datetime.fromtimestamp(START + 90, datetime.UTC).isoformat()
    shown = ganymede("history", "nb.ipynb", "--at", moment, cwd=notebook.parent)
    assert shown.returncode == 0, shown.stderr
    assert [c.source for c in nbformat.reads(shown.stdout, as_version=4).cells] == ["a = 1 # one"]
    latest = ganymede("history", "nb.ipynb", "--at", "3", cwd=notebook.parent)
    assert [c.source for c in nbformat.reads(latest.stdout, as_version=4).cells] == [
        "a = 1 # one # two"
    ]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--at", "9"], 2, "no point #9 (points are #1 to #3)"),
        (["--at", "yesterday"], 2, "give a point's number or a time"),
        (["--at", "2020-01-01T00:00"], 2, "no history before"),
    ],
)
def test_bad_points_get_one_clear_line(
    notebook: Path, args: list[str], code: int, message: str
) -> None:
    done = ganymede("history", "nb.ipynb", *args, cwd=notebook.parent)
    assert done.returncode == code
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_unreadable_history_is_reported_and_left_where_it_is(
    notebook: Path, isolated_jupyter: Path
) -> None:
    database = isolated_jupyter / "data" / "ganymede_history.db"
    database.write_bytes(b"not a database " * 100)
    done = ganymede("history", "nb.ipynb", cwd=notebook.parent)
    assert done.returncode == 1 and "the history cannot be read" in done.stderr
    assert database.read_bytes().startswith(b"not a database")


def test_a_file_without_history_or_missing(tmp_path: Path) -> None:
    (tmp_path / "plain.ipynb").write_text("{}")
    none = ganymede("history", "plain.ipynb", cwd=tmp_path)
    assert none.returncode == 1 and "no history: it was never opened in a room" in none.stderr
    missing = ganymede("history", "gone.ipynb", cwd=tmp_path)
    assert missing.returncode == 5 and "no such file" in missing.stderr
