"""``--cache DIR``: executed notebooks of successful runs, kept by the key of what produced them.

One file per entry, ``DIR/<2 hex>/<key>.ipynb``, holding the executed notebook. Parallel jobs
may share a directory without a lock: an entry is written to a temporary file beside it and
renamed into place, so a reader sees the whole old entry, the whole new one, or none; two
writers of one key write the same content, and the last rename wins. A hit touches the entry's
modification time, and after every store the least recently used entries go until the directory
is within its bound; an entry removed under a reader is a miss, never an error.

Only the standard library and the key module are imported here: a cached rerun starts no kernel
and must not pay for importing one.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ganymede.core.files import atomic_write
from ganymede.execute.cache_key import InputDigest

ENTRY_SUFFIX = ".ipynb"
MEGABYTE = 1024 * 1024
DEFAULT_MAX_MB = 1024.0
READ_CHUNK = 1024 * 1024


class RunCache:
    """A cache directory bounded to ``max_bytes`` of entries."""

    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes

    def entry_path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}{ENTRY_SUFFIX}"

    def load(self, key: str) -> dict[str, Any] | None:
        """The executed notebook stored under ``key``, marked as just used; None on a miss (an
        entry that is gone, unreadable or not a notebook counts as missing)."""
        path = self.entry_path(key)
        try:
            notebook = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return None
        if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)
        return notebook

    def store(self, key: str, text: str) -> None:
        """Keep ``text`` (an executed notebook) under ``key``, then bring the cache within its
        bound. OSError when the entry cannot be written; the cache is then as it was."""
        path = self.entry_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"), durable=False)
        self.prune(keep=path)

    def prune(self, keep: Path | None = None) -> list[Path]:
        """Remove the least recently used entries until the rest fit in ``max_bytes``; ``keep``
        (the entry just stored) stays even when it alone is larger. Returns what went."""
        entries = []
        for path in self.directory.glob(f"??/*{ENTRY_SUFFIX}"):
            with contextlib.suppress(FileNotFoundError):
                status = path.stat()
                entries.append((status.st_mtime_ns, status.st_size, path))
        total = sum(size for _, size, _ in entries)
        removed = []
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            if path == keep:
                continue
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
            total -= size
        return removed


def digest_inputs(patterns: Sequence[str], base: Path) -> list[InputDigest]:
    """Each pattern (a path or glob, ``**`` included, relative to ``base`` unless absolute) with
    the files it matches now and the SHA-256 of their bytes. A pattern naming a file that cannot
    be read is an OSError: a run that depends on it could not be keyed honestly."""
    digests = []
    for pattern in patterns:
        anchored = pattern if os.path.isabs(pattern) else str(base / pattern)
        matches = sorted(glob.glob(anchored, recursive=True))
        files = []
        for match in matches:
            if os.path.isdir(match):
                continue
            shown = os.path.relpath(match, base) if not os.path.isabs(pattern) else match
            files.append((shown, _file_digest(Path(match))))
        digests.append(InputDigest(pattern, tuple(files)))
    return digests


def max_bytes(megabytes: float) -> int:
    return int(megabytes * MEGABYTE)


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(READ_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
