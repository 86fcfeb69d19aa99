"""The notebooks core: list, read, search and results over a root, as data.

Every door (the host responder, the MCP tools, the CLI) calls this one class and renders its
answers; nothing here knows about JSON-RPC, HTTP or text for a model.

A server hands in ``open_document``: given an API path, it returns the notebook of the open room
for it (with edits not yet saved) as nbformat 4 JSON, or None when no room is open. ``read``,
``search`` and ``results`` then see what people see, not the older file. The dict is handed to
the caller as it comes (``read`` returns it), so ``open_document`` should return a fresh snapshot
with sources as strings, as jupyter_ydoc's ``YNotebook.get()`` does. ``list`` reads files only:
titles and times there are those of the saved notebooks.

A server may also hand in ``open_names``: the file names (last path segment) its rooms have
open. A search then asks ``open_document`` only about notebooks so named, once per search
instead of once per file.

A long-lived server also hands in a ``SearchCache``: searches then stat files and answer from
what earlier searches kept, reading only files that changed. One-shot callers leave it out and
read each file once, parsing only those whose raw bytes may hold the query.
"""

from __future__ import annotations

import builtins
import os
import time
from collections.abc import Callable, Set
from pathlib import Path
from typing import Any

from ganymede.core.documents import (
    iso_utc,
    kernel_of,
    parse_loose,
    parse_strict,
    read_bytes,
    read_raw,
    source_text,
    title_of,
)
from ganymede.core.paths import normalize_api_path, resolve
from ganymede.core.search import EMPTY_NOTEBOOK, Query, SearchableNotebook
from ganymede.core.search_cache import FileStamp, SearchCache
from ganymede.core.tree import NOTEBOOK_SUFFIX, Entry, visible_entries, walk_notebooks
from ganymede.errors import NotebookNotFound, PathError, UsageError
from ganymede.notebook.hashing import source_hash
from ganymede.notebook.results import read_results

OpenDocument = Callable[[str], dict[str, Any] | None]
OpenNames = Callable[[], Set[str]]

CELL_TYPES = ("code", "markdown", "raw")
SEARCH_LIMIT_MAX = 500
SEARCH_LIMIT_DEFAULT = 20


class Notebooks:
    """The notebooks under one root, read from open rooms when there are any, else from files."""

    def __init__(
        self,
        root: Path,
        open_document: OpenDocument | None = None,
        search_cache: SearchCache | None = None,
        open_names: OpenNames | None = None,
    ) -> None:
        real_root = Path(root).resolve()
        if not real_root.is_dir():
            raise NotebookNotFound(str(root))
        self.root = real_root
        self._open_document = open_document
        self._search_cache = search_cache
        self._open_names = open_names

    def list(self, dir: str = "") -> builtins.list[dict[str, Any]]:
        """The notebooks and directories directly in ``dir``: directories first, then by name."""
        directory, real_dir = self._directory(dir)
        try:
            entries = visible_entries(self.root, directory, real_dir)
        except PermissionError:
            raise PathError(directory, "permission denied") from None
        entries.sort(key=lambda entry: (not entry.is_dir, entry.name))
        return [self._summary(entry) for entry in entries]

    def read(self, path: str) -> dict[str, Any]:
        """The notebook as nbformat 4 JSON and each cell's source hash by cell id."""
        notebook = self._notebook(path)
        hashes = {
            cell["id"]: source_hash(source_text(cell))
            for cell in notebook.get("cells") or []
            if isinstance(cell.get("id"), str)
        }
        return {"notebook": notebook, "hashes": hashes}

    def results(self, path: str) -> dict[str, Any]:
        """The notebook's named results, read from its outputs (the run contract)."""
        return read_results(self._notebook(path).get("cells") or [])

    def search(
        self,
        query: str,
        dir: str = "",
        outputs: bool = False,
        cell_type: str | None = None,
        limit: int = SEARCH_LIMIT_DEFAULT,
    ) -> dict[str, Any]:
        """Cells under ``dir`` (recursively) whose source, or outputs, contain ``query``.

        One hit per cell and place (``in``: "source" or "outputs"), ordered by path then cell
        index; ``total`` counts every hit, only the first ``limit`` are returned.
        """
        parsed = Query.parse(query)
        if cell_type is not None and cell_type not in CELL_TYPES:
            raise UsageError(f"cell_type must be one of {', '.join(CELL_TYPES)}, not {cell_type!r}")
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise UsageError(f"limit must be an integer, not {limit!r}")
        if not 1 <= limit <= SEARCH_LIMIT_MAX:
            raise UsageError(f"limit must be between 1 and {SEARCH_LIMIT_MAX}, not {limit}")
        directory, real_dir = self._directory(dir)
        hits: builtins.list[dict[str, Any]] = []
        total = 0
        started_ns = time.time_ns()
        open_names = None if self._open_names is None else self._open_names()
        for entry in walk_notebooks(self.root, directory, real_dir):
            may_be_open = open_names is None or entry.name in open_names
            notebook = self._searchable(entry, parsed, started_ns, may_be_open)
            if notebook is None or not notebook.may_match(parsed):
                continue
            stem = entry.name[: -len(NOTEBOOK_SUFFIX)]
            for hit in notebook.hits(entry.api_path, stem, parsed, outputs, cell_type):
                total += 1
                if len(hits) < limit:
                    hits.append(hit)
        return {"hits": hits, "total": total, "truncated": total > limit}

    def _directory(self, dir: str) -> tuple[str, Path]:
        directory = normalize_api_path(dir)
        real_dir = resolve(self.root, directory)
        if not real_dir.exists():
            raise NotebookNotFound(directory)
        if not real_dir.is_dir():
            raise UsageError(f"{directory}: not a directory")
        return directory, real_dir

    def _summary(self, entry: Entry) -> dict[str, Any]:
        try:
            modified: str | None = iso_utc(entry.real.stat().st_mtime)
        except OSError:
            modified = None
        if entry.is_dir:
            return {
                "path": entry.api_path,
                "type": "directory",
                "title": entry.name,
                "kernel": None,
                "modified": modified,
            }
        stem = entry.name[: -len(NOTEBOOK_SUFFIX)]
        try:
            notebook = parse_loose(entry.real.read_bytes(), entry.api_path)
        except OSError:
            notebook = None
        return {
            "path": entry.api_path,
            "type": "notebook",
            "title": title_of(notebook, stem) if notebook else stem,
            "kernel": kernel_of(notebook) if notebook else None,
            "modified": modified,
        }

    def _notebook(self, path: str) -> dict[str, Any]:
        """The notebook at ``path``: its open room's, else the validated file's."""
        api_path = normalize_api_path(path)
        real = resolve(self.root, api_path)
        if self._open_document is not None:
            live = self._open_document(api_path)
            if live is not None:
                return live
        return parse_strict(read_bytes(real, api_path), api_path)

    def _searchable(
        self, entry: Entry, query: Query, now_ns: int, may_be_open: bool
    ) -> SearchableNotebook | None:
        """The notebook to search for ``entry``, or None when it cannot hold a match."""
        if self._open_document is not None and may_be_open:
            live = self._open_document(entry.api_path)
            if live is not None:
                return SearchableNotebook.of(live)
        cache = self._search_cache
        if cache is None:
            return _read_if_may_match(entry, query)
        try:
            stamp = FileStamp.of(os.stat(entry.location))
        except OSError:
            return None
        kept = cache.get(entry.location, stamp)
        if kept is not None:
            return kept
        if not cache.would_keep(stamp, now_ns):
            return _read_if_may_match(entry, query)
        return _read_to_keep(entry, cache, stamp, now_ns)


def _read_if_may_match(entry: Entry, query: Query) -> SearchableNotebook | None:
    """The file's notebook, parsed only when its raw bytes may hold ``query``."""
    try:
        raw = read_raw(entry.location)
    except OSError:
        return None
    if not query.may_occur_in(raw):
        return None
    notebook = parse_loose(raw, entry.api_path)
    return None if notebook is None else SearchableNotebook.of(notebook)


def _read_to_keep(
    entry: Entry, cache: SearchCache, stamp: FileStamp, now_ns: int
) -> SearchableNotebook | None:
    """The file's notebook, parsed whatever the query and kept for later searches."""
    try:
        raw = read_raw(entry.location)
    except OSError:
        return None
    notebook = parse_loose(raw, entry.api_path)
    searchable = EMPTY_NOTEBOOK if notebook is None else SearchableNotebook.of(notebook)
    cache.put(entry.location, stamp, searchable, now_ns)
    return searchable
