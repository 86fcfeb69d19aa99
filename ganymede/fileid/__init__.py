"""File ids: a uuid4 per file under the root that follows the file through renames.

Rooms, grants and the JupyterLab collaboration frontend name files by id, so a rename through
the contents API keeps every reference intact. A file moved by another program simply gets a
new id the next time it is indexed.
"""

from __future__ import annotations

from ganymede.fileid.paths import api_path_of, os_path_of
from ganymede.fileid.store import DB_NAME, FileIdStore, default_db_path

__all__ = [
    "DB_NAME",
    "FileIdStore",
    "api_path_of",
    "default_db_path",
    "os_path_of",
]
