"""The history store: each document's points in SQLite, ``<jupyter_data_dir>/ganymede_history.db``.

One database for every root, keyed by file id (ids are unique across roots). Writes come in
batches from the rooms' recorder, off the event loop; after each batch the documents it touched
are brought back within their bounds (``points.plan``).

A database that cannot be read (corrupt, not a database) is moved aside to
``ganymede_history.db.corrupt-<time>`` with one warning and a fresh one is started; one that
cannot be opened at all leaves the store recording in memory until the process stops. Either
way nothing waits on it: the history is a record, and a room opens from its file.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from pycrdt import Doc

from ganymede.errors import GanymedeError
from ganymede.history.points import (
    Bounds,
    NewPoint,
    PointInfo,
    PointKind,
    plan,
    replay,
    replay_ids,
    snapshot,
)

DB_NAME = "ganymede_history.db"
SCHEMA = """
CREATE TABLE IF NOT EXISTS points (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    file_id TEXT NOT NULL,
    epoch TEXT NOT NULL,
    at REAL NOT NULL,
    who TEXT NOT NULL,
    kind TEXT NOT NULL,
    size INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS points_by_file ON points (file_id, id);
"""
PAGE_CACHE_KB = 256
"""SQLite's page cache for the server's history connection. Its default, 2 MB, fills once a
few documents are recorded (an opened notebook's first point is its whole update) and is
never given back, yet history is mostly written: its points are read back only for a timeline
or a compaction, and the system's file cache serves those reads as well."""
# Plans applied in a row at most: each compaction shrinks the history, so two or three do.
MAX_PLAN_ROUNDS = 4

Answer = TypeVar("Answer")


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """All of the block's writes or none, and no reader sees them half done (the connection
    commits each statement on its own otherwise)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def default_db_path() -> Path:
    """``<jupyter_data_dir>/ganymede_history.db``, honouring JUPYTER_DATA_DIR."""
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / DB_NAME


class HistoryUnreadable(GanymedeError, OSError):
    """A history database a reader cannot read (it leaves it for the server to move aside)."""

    def __init__(self, path: Path, error: Exception) -> None:
        super().__init__(f"{path}: the history cannot be read: {error}")
        self.path = path


class HistoryStore:
    """Every document's points; thread-safe (the recorder writes from a worker thread).

    ``read_only``: a reader beside a running server (``ganymede history``) that never writes,
    never moves a database aside (HistoryUnreadable instead), and finds no history where there
    is no database.
    """

    def __init__(
        self,
        db_path: Path | None = None,
        bounds: Bounds | None = None,
        log: logging.Logger | None = None,
        clock: Callable[[], float] = time.time,
        *,
        read_only: bool = False,
    ) -> None:
        self.read_only = read_only
        self.db_path = db_path if db_path is not None else default_db_path()
        self.bounds = bounds if bounds is not None else Bounds()
        self._log = log if log is not None else logging.getLogger(__name__)
        self._clock = clock
        self._lock = threading.Lock()
        self.in_memory = False
        self._db = self._open()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def append(self, points: Sequence[NewPoint]) -> None:
        """Store ``points`` (in order), then bound the history of each document they touch."""
        if not points:
            return
        rows = [
            (p.file_id, p.epoch, p.at, p.who, p.kind.value, len(p.data), p.data) for p in points
        ]

        def insert(db: sqlite3.Connection) -> None:
            with _transaction(db):
                db.executemany(
                    "INSERT INTO points (file_id, epoch, at, who, kind, size, data)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )

        self._run(insert)
        for file_id in dict.fromkeys(point.file_id for point in points):
            self.enforce_bounds(file_id)

    def points(self, file_id: str) -> list[PointInfo]:
        """The document's points, oldest first (none for a file with no history)."""

        def select(db: sqlite3.Connection) -> list[PointInfo]:
            rows = db.execute(
                "SELECT id, epoch, at, who, kind, size FROM points WHERE file_id = ? ORDER BY id",
                (file_id,),
            ).fetchall()
            return [PointInfo(r[0], r[1], r[2], r[3], PointKind(r[4]), r[5]) for r in rows]

        return self._run(select)

    def size(self, file_id: str) -> int:
        """Bytes of updates the document's history holds."""
        return sum(point.size for point in self.points(file_id))

    def updates(self, ids: Iterable[int]) -> list[bytes]:
        """The updates of the points ``ids``, in id order."""
        wanted = sorted(ids)

        def select(db: sqlite3.Connection) -> list[bytes]:
            found: list[bytes] = []
            for start in range(0, len(wanted), 500):  # SQLite's variable limit
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    f"SELECT data FROM points WHERE id IN ({marks}) ORDER BY id", chunk
                ).fetchall()
                found.extend(bytes(row[0]) for row in rows)
            return found

        return self._run(select)

    def document_at(
        self, file_id: str, point: PointInfo, points: Sequence[PointInfo] | None = None
    ) -> Doc:
        """The document as of ``point``, replayed from its epoch's start."""
        known = points if points is not None else self.points(file_id)
        return replay(self.updates(replay_ids(known, point)))

    def enforce_bounds(self, file_id: str) -> None:
        """Drop and compact the document's oldest points until its history is in bounds."""
        for _ in range(MAX_PLAN_ROUNDS):
            todo = plan(self.points(file_id), self.bounds, self._clock())
            if todo.empty:
                return
            self._apply_plan(todo.drop, todo.compact)

    def _apply_plan(self, drop: Sequence[int], compact: Sequence[Sequence[int]]) -> None:
        snapshots = [(run[-1], snapshot(self.updates(run)), run[:-1]) for run in compact]

        def apply(db: sqlite3.Connection) -> None:
            with _transaction(db):
                doomed = [*drop, *(i for _, _, earlier in snapshots for i in earlier)]
                db.executemany("DELETE FROM points WHERE id = ?", [(i,) for i in doomed])
                db.executemany(
                    "UPDATE points SET data = ?, size = ?, kind = ? WHERE id = ?",
                    [(d, len(d), PointKind.SNAPSHOT.value, last) for last, d, _ in snapshots],
                )

        self._run(apply)

    def forget(self, file_id: str) -> None:
        """Drop a document's whole history."""

        def delete(db: sqlite3.Connection) -> None:
            with _transaction(db):
                db.execute("DELETE FROM points WHERE file_id = ?", (file_id,))

        self._run(delete)

    def _open(self) -> sqlite3.Connection:
        if self.read_only:
            return self._open_read_only()
        try:
            return self._connect(self.db_path)
        except sqlite3.DatabaseError as error:
            if self.db_path.exists() and not isinstance(error, sqlite3.OperationalError):
                self._move_aside(error)
                try:
                    return self._connect(self.db_path)
                except (sqlite3.Error, OSError) as again:
                    error = again
            return self._in_memory(error)
        except OSError as error:
            return self._in_memory(error)

    def _open_read_only(self) -> sqlite3.Connection:
        if not self.db_path.exists():
            db = sqlite3.connect(":memory:", check_same_thread=False)
            db.executescript(SCHEMA)
            return db
        try:
            db = sqlite3.connect(f"{self.db_path.as_uri()}?mode=ro", uri=True)
            db.execute("SELECT count(*) FROM points").fetchone()
        except sqlite3.Error as error:
            raise HistoryUnreadable(self.db_path, error) from None
        return db

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KB}")
            db.executescript(SCHEMA)
            db.execute("SELECT count(*) FROM points").fetchone()
        except BaseException:
            db.close()
            raise
        return db

    def _move_aside(self, error: Exception) -> None:
        aside = self.db_path.with_name(f"{self.db_path.name}.corrupt-{int(self._clock())}")
        self._log.warning(
            "history: %s cannot be read (%s); moved it to %s and started a new history",
            self.db_path,
            error,
            aside,
        )
        self.db_path.rename(aside)
        for suffix in ("-wal", "-shm"):
            leftover = self.db_path.with_name(self.db_path.name + suffix)
            leftover.unlink(missing_ok=True)

    def _in_memory(self, error: Exception) -> sqlite3.Connection:
        self._log.warning(
            "history: cannot open %s (%s); history is kept in memory until the server stops",
            self.db_path,
            error,
        )
        self.in_memory = True
        db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        db.executescript(SCHEMA)
        return db

    def _run(self, operation: Callable[[sqlite3.Connection], Answer]) -> Answer:
        """Run ``operation``; a database found corrupt meanwhile is moved aside and replaced
        (its history is lost, said once), and the operation runs on the new one."""
        with self._lock:
            try:
                return operation(self._db)
            except sqlite3.DatabaseError as error:
                if self.read_only:
                    raise HistoryUnreadable(self.db_path, error) from None
                if self.in_memory or isinstance(error, sqlite3.OperationalError):
                    raise
                self._db.close()
                self._move_aside(error)
                self._db = self._open_fresh()
                return operation(self._db)

    def _open_fresh(self) -> sqlite3.Connection:
        try:
            return self._connect(self.db_path)
        except (sqlite3.Error, OSError) as error:
            return self._in_memory(error)
