"""The notebooks core: list, read, search and results over a root, returning data, never text.

The host responder, the MCP tools and the CLI all call this one implementation. Its names are
imported on first use, so a caller of one small module here (``ganymede.core.files``) does not
load the whole core with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ganymede.core.notebooks import CELL_TYPES, SEARCH_LIMIT_MAX, Notebooks, OpenDocument
    from ganymede.core.paths import normalize_api_path, resolve, to_api_path

__all__ = [
    "CELL_TYPES",
    "SEARCH_LIMIT_MAX",
    "Notebooks",
    "OpenDocument",
    "normalize_api_path",
    "resolve",
    "to_api_path",
]
HOMES = {
    "CELL_TYPES": "ganymede.core.notebooks",
    "SEARCH_LIMIT_MAX": "ganymede.core.notebooks",
    "Notebooks": "ganymede.core.notebooks",
    "OpenDocument": "ganymede.core.notebooks",
    "normalize_api_path": "ganymede.core.paths",
    "resolve": "ganymede.core.paths",
    "to_api_path": "ganymede.core.paths",
}


def __getattr__(name: str) -> Any:
    if name in HOMES:
        import importlib

        return getattr(importlib.import_module(HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
