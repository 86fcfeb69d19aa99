"""A file's history read from the store with no server running: its points, and the file as it
was at one of them (what ``ganymede history`` shows)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from jupyter_ydoc import YNotebook
from pycrdt import Doc, Text

from ganymede.errors import NotebookNotFound, UsageError
from ganymede.fileid import FileIdStore
from ganymede.history.points import PointInfo, point_at, step_points
from ganymede.history.store import HistoryStore
from ganymede.notebook.nbio import dumps_fresh_notebook


class NoHistory(UsageError, LookupError):
    """A file the store holds nothing about (never opened in a room, or its history expired)."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path}: no history: {why}")
        self.path = path


@dataclass(frozen=True)
class FileHistory:
    path: Path
    file_id: str
    points: list[PointInfo]  # every point, bookkeeping included

    @property
    def steps(self) -> list[PointInfo]:
        """The points a person reads, oldest first (numbered from 1 when shown)."""
        return step_points(self.points)


def file_history(path: Path, store: HistoryStore) -> FileHistory:
    """The points of the file at ``path`` (NoHistory when there are none)."""
    resolved = path.resolve()
    if not resolved.is_file():
        raise NotebookNotFound(str(path))
    file_ids = FileIdStore(resolved.parent)
    try:
        file_id = file_ids.get_id(resolved.name)
    finally:
        file_ids.close()
    if file_id is None:
        raise NoHistory(path, "it was never opened in a room")
    points = store.points(file_id)
    if not step_points(points):
        raise NoHistory(path, "none recorded, or all of it expired")
    return FileHistory(path, file_id, points)


def parse_when(text: str) -> int | datetime.datetime:
    """A point's number as ``ganymede history`` lists it (``3`` or ``#3``), or a date and time
    in ISO 8601 (local time unless it names its zone); UsageError otherwise."""
    number = text.removeprefix("#")
    if number.isdigit():
        return int(number)
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"--at {text!r}: give a point's number or a time such as 2026-12-04T15:30"
        ) from None
    return moment if moment.tzinfo is not None else moment.astimezone()


def chosen_point(history: FileHistory, when: int | datetime.datetime) -> PointInfo:
    """The point ``when`` names: by number, or the last one at or before that time."""
    steps = history.steps
    if isinstance(when, int):
        if not 1 <= when <= len(steps):
            raise UsageError(f"{history.path}: no point #{when} (points are #1 to #{len(steps)})")
        return steps[when - 1]
    found = point_at(history.points, when.timestamp())
    if found is None:
        first = format_time(steps[0].at)
        raise UsageError(f"{history.path}: no history before {first}, its first point")
    return found


def content_at(history: FileHistory, point: PointInfo, store: HistoryStore) -> bytes:
    """The file as it was at ``point``: a notebook as Jupyter writes one, or the text."""
    doc = store.document_at(history.file_id, point, history.points)
    return document_bytes(doc, history.path)


def document_bytes(doc: Doc, path: Path) -> bytes:
    if path.suffix == ".ipynb":
        return dumps_fresh_notebook(YNotebook(doc).get()).encode("utf-8")
    return str(doc.get("source", type=Text)).encode("utf-8")


def format_time(at: float) -> str:
    """Local time to the second, as people read it."""
    moment = datetime.datetime.fromtimestamp(at).astimezone()
    return moment.isoformat(sep=" ", timespec="seconds")
