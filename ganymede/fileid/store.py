"""The file id store: uuid4 ids for files under one root, kept in SQLite.

Rows hold absolute paths, so one database serves every root (two servers on different roots, or
``ganymede grant`` without a server) without their API paths colliding. An id only resolves while
its file exists: a file moved by another program leaves its old row behind and is given a new id
at its new path.

When the database cannot be opened, read or written (a directory in its place, an unwritable
location, a corrupt file), the store carries on with the ids in memory until the process stops,
and says so once: losing ids across a restart is better than a server that cannot open files.
Ids this process has handed out keep resolving across the switch (open rooms are named by them),
even when the broken database can no longer be read.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ganymede.core.paths import normalize_api_path
from ganymede.errors import NotebookNotFound
from ganymede.fileid.paths import api_path_of, os_path_of

DB_NAME = "ganymede_file_ids.db"
SCHEMA = "CREATE TABLE IF NOT EXISTS file_ids (id TEXT PRIMARY KEY, path TEXT NOT NULL UNIQUE)"

Answer = TypeVar("Answer")
Operation = Callable[[sqlite3.Connection], Answer]


def default_db_path() -> Path:
    """``<jupyter_data_dir>/ganymede_file_ids.db``, honouring JUPYTER_DATA_DIR."""
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / DB_NAME


class FileIdStore:
    """Ids for the files under ``root``; every method takes and returns API paths."""

    def __init__(
        self, root: Path, db_path: Path | None = None, log: logging.Logger | None = None
    ) -> None:
        self.root = root.resolve()
        self.db_path = db_path if db_path is not None else default_db_path()
        self._log = log if log is not None else logging.getLogger(__name__)
        self._lock = threading.Lock()
        self._in_memory = False
        self._handed_out: dict[str, str] = {}
        try:
            self._db = self._open_file()
        except (sqlite3.Error, OSError) as error:
            self._db = self._fall_back_to_memory(None, error)

    @property
    def in_memory(self) -> bool:
        """True once the database failed and ids live only as long as this process."""
        return self._in_memory

    def index(self, api_path: str, *, missing_ok: bool = False) -> str:
        """The id of an existing file or directory, given a new one if it has none yet.

        ``missing_ok``: a path with no file yet gets its id too (the file it names will have
        it once created), as jupyter-server-fileid's default manager does; ``get_path`` of
        that id answers None until the file exists.
        """
        os_path = os_path_of(self.root, api_path)
        if not missing_ok and not os_path.exists():
            raise NotebookNotFound(api_path)

        def find_or_add(db: sqlite3.Connection) -> str:
            row = db.execute("SELECT id FROM file_ids WHERE path = ?", (str(os_path),)).fetchone()
            if row is not None:
                return str(row[0])
            file_id = str(uuid.uuid4())
            db.execute("INSERT INTO file_ids (id, path) VALUES (?, ?)", (file_id, str(os_path)))
            return file_id

        file_id = self._run(find_or_add)
        self._handed_out[file_id] = str(os_path)
        return file_id

    def get_id(self, api_path: str) -> str | None:
        """The id of an existing file, or None if it has none (or does not exist)."""
        os_path = os_path_of(self.root, api_path)
        if not os_path.exists():
            return None
        row = self._run(
            lambda db: db.execute(
                "SELECT id FROM file_ids WHERE path = ?", (str(os_path),)
            ).fetchone()
        )
        if row is None:
            return None
        self._handed_out[str(row[0])] = str(os_path)
        return str(row[0])

    def get_path(self, file_id: str) -> str | None:
        """The API path of the file with this id, or None if it is gone or outside the root."""
        row = self._run(
            lambda db: db.execute("SELECT path FROM file_ids WHERE id = ?", (file_id,)).fetchone()
        )
        if row is None:
            return None
        self._handed_out[file_id] = str(row[0])
        os_path = Path(row[0])
        if not os_path.exists():
            return None
        return api_path_of(self.root, os_path)

    def move(self, old_api_path: str, new_api_path: str) -> None:
        """Carry the id of ``old`` (and of everything under it, for a directory) to ``new``.

        Called after the rename succeeded; a row already at ``new`` names a file that no longer
        exists there, so it is dropped.
        """
        old = str(self._lexical_path(old_api_path))
        new = str(self._lexical_path(new_api_path))
        if old == new:
            return

        def relabel(db: sqlite3.Connection) -> None:
            _delete_tree(db, new)
            db.execute(
                "UPDATE file_ids SET path = ? || substr(path, ?)"
                " WHERE path = ? OR substr(path, 1, ?) = ?",
                (new, len(old) + 1, old, len(old) + 1, old + "/"),
            )

        self._run(relabel)
        self._forget_handed_out(new)
        for file_id, path in list(self._handed_out.items()):
            if _is_within(path, old):
                self._handed_out[file_id] = new + path[len(old) :]

    def delete(self, api_path: str) -> None:
        """Forget the id of a deleted file, or of a deleted directory and everything under it."""
        path = str(self._lexical_path(api_path))
        self._run(lambda db: _delete_tree(db, path))
        self._forget_handed_out(path)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _forget_handed_out(self, top: str) -> None:
        for file_id, path in list(self._handed_out.items()):
            if _is_within(path, top):
                del self._handed_out[file_id]

    def _lexical_path(self, api_path: str) -> Path:
        """Where an API path points without resolving symlinks: rows are relabelled, not read."""
        relative = normalize_api_path(api_path)
        return self.root / relative if relative else self.root

    def _open_file(self) -> sqlite3.Connection:
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.db_path, timeout=10, check_same_thread=False)
        try:
            with db:
                db.execute(SCHEMA)
        except sqlite3.Error:
            db.close()
            raise
        return db

    def _fall_back_to_memory(
        self, failing: sqlite3.Connection | None, error: Exception
    ) -> sqlite3.Connection:
        """Switch to an in-memory database holding what the failing one still lets us read,
        and at least every id this process handed out."""
        memory = sqlite3.connect(":memory:", check_same_thread=False)
        if failing is not None:
            try:
                failing.backup(memory)
            except sqlite3.Error as unreadable:
                self._log.debug("file ids: cannot copy %s: %s", self.db_path, unreadable)
            failing.close()
        with memory:
            memory.execute(SCHEMA)
            memory.executemany(
                "INSERT OR REPLACE INTO file_ids (id, path) VALUES (?, ?)",
                self._handed_out.items(),
            )
        self._in_memory = True
        self._log.warning(
            "file ids: cannot use %s (%s); keeping ids in memory until the server stops",
            self.db_path,
            error,
        )
        return memory

    def _run(self, operation: Operation[Answer]) -> Answer:
        """Run one operation in a transaction, falling back to memory the first time it fails."""
        with self._lock:
            try:
                with self._db:
                    return operation(self._db)
            except sqlite3.ProgrammingError:
                raise  # a closed store or a bad query: ours to fix, not the database's
            except sqlite3.Error as error:
                if self._in_memory:
                    raise
                self._db = self._fall_back_to_memory(self._db, error)
                with self._db:
                    return operation(self._db)


def _delete_tree(db: sqlite3.Connection, path: str) -> None:
    db.execute(
        "DELETE FROM file_ids WHERE path = ? OR substr(path, 1, ?) = ?",
        (path, len(path) + 1, path + "/"),
    )


def _is_within(path: str, top: str) -> bool:
    """``path`` is ``top`` or lies under it (the test the SQL ``substr`` clauses make)."""
    return path == top or path.startswith(top + "/")
