"""Per-notebook grants on disk: ``<jupyter_data_dir>/ganymede_grants.toml``, keyed by file id.

Keyed by file id so a grant follows its notebook through renames; each entry also records the
path it had when last granted, for a person reading the file. Writes replace the file
atomically, and a file that cannot be parsed is never overwritten: every operation on it fails
with a ConfigError naming it, until someone repairs or removes it.

    [notebooks."6f1c…"]
    path = "journal/index.ipynb"
    read = ["journal"]
    run = ["reports"]
    edit_self = false
"""

from __future__ import annotations

import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from ganymede.core.files import atomic_write
from ganymede.errors import ConfigError, UsageError
from ganymede.grant.model import NotebookGrant

STORE_NAME = "ganymede_grants.toml"
SECTION = "notebooks"


def default_store_path() -> Path:
    """``<jupyter_data_dir>/ganymede_grants.toml``, beside the file id database."""
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / STORE_NAME


@dataclass(frozen=True)
class StoredGrant:
    """One notebook's grant and the API path it had when it was last set."""

    grant: NotebookGrant
    path: str


class GrantStore:
    """Reads the file again whenever it changed on disk, so edits by another process count."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else default_store_path()
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._entries: dict[str, StoredGrant] = {}

    def get(self, file_id: str) -> NotebookGrant | None:
        stored = self.all().get(file_id)
        return stored.grant if stored is not None else None

    def all(self) -> dict[str, StoredGrant]:
        """Every notebook's grant by file id."""
        with self._lock:
            return dict(self._load())

    def set(self, file_id: str, grant: NotebookGrant, path: str) -> None:
        """Store ``grant`` for the notebook; a grant that sets no key removes the entry."""
        with self._lock:
            entries = dict(self._load())
            if grant.empty:
                entries.pop(file_id, None)
            else:
                entries[file_id] = StoredGrant(grant, path)
            self._write(entries)

    def delete(self, file_id: str) -> bool:
        """Forget the notebook's grant; False when it had none."""
        with self._lock:
            entries = dict(self._load())
            if entries.pop(file_id, None) is None:
                return False
            self._write(entries)
            return True

    def _load(self) -> dict[str, StoredGrant]:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._seen, self._entries = None, {}
            return self._entries
        except OSError as error:
            raise ConfigError(f"{self.path}: cannot read grants: {error}") from None
        seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if seen != self._seen:
            self._entries = self._parse()
            self._seen = seen
        return self._entries

    def _parse(self) -> dict[str, StoredGrant]:
        try:
            data = tomllib.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
            raise ConfigError(f"{self.path}: cannot read grants: {error}") from None
        unknown = set(data) - {SECTION}
        if unknown:
            raise ConfigError(f"{self.path}: unknown section [{sorted(unknown)[0]}]")
        section = data.get(SECTION, {})
        if not isinstance(section, dict):
            raise ConfigError(f"{self.path}: [{SECTION}] must be a table")
        return {file_id: self._entry(file_id, raw) for file_id, raw in section.items()}

    def _entry(self, file_id: str, raw: Any) -> StoredGrant:
        where = f"{self.path}: [{SECTION}.{file_id!r}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("path", ""), str):
            raise ConfigError(f"{where}: must be a table with a string path")
        fields = {key: value for key, value in raw.items() if key != "path"}
        try:
            grant = NotebookGrant.from_json(fields, where)
        except UsageError as error:
            raise ConfigError(str(error)) from None
        return StoredGrant(grant, raw.get("path", ""))

    def _write(self, entries: dict[str, StoredGrant]) -> None:
        table = {
            file_id: {"path": stored.path, **stored.grant.to_json()}
            for file_id, stored in sorted(entries.items())
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            atomic_write(self.path, tomli_w.dumps({SECTION: table}).encode("utf-8"))
        except OSError as error:
            raise ConfigError(f"{self.path}: cannot write grants: {error}") from None
        self._seen = None  # read back on next use: the stat of our own write is not cached
