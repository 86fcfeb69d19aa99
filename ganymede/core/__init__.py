"""The notebooks core: list, read, search and results over a root, returning data, never text.

The host responder, the MCP tools and the CLI all call this one implementation.
"""

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
