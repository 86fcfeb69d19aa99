"""API paths (``dir/nb.ipynb``, relative to the served root) and the file system paths they name.

Pure path arithmetic apart from the one symlink resolution that decides whether a path escapes
the root; nothing here reads or writes files.
"""

from __future__ import annotations

from pathlib import Path

from ganymede.errors import PathError


def normalize_api_path(api_path: str) -> str:
    """The canonical form of an API path: no leading, trailing or doubled slashes, no ``.``.

    A leading slash means "from the root", as in the contents API. ``..`` is refused outright
    rather than folded away, so a path never names something other than what it spells.
    """
    if "\0" in api_path:
        raise PathError(api_path, "contains a NUL byte")
    parts = [part for part in api_path.replace("\\", "/").split("/") if part not in ("", ".")]
    if ".." in parts:
        raise PathError(api_path, "climbs out of the root with '..'")
    return "/".join(parts)


def os_path_of(root: Path, api_path: str) -> Path:
    """The file system path an API path names under ``root`` (itself already resolved).

    The returned path keeps symlinks as written (a link is a file of its own), but a path whose
    target resolves outside the root is refused.
    """
    relative = normalize_api_path(api_path)
    candidate = root / relative if relative else root
    if not candidate.resolve().is_relative_to(root):
        raise PathError(api_path, "resolves outside the root")
    return candidate


def api_path_of(root: Path, os_path: Path) -> str | None:
    """The API path of ``os_path`` under ``root``; None when it lies elsewhere."""
    try:
        relative = os_path.relative_to(root)
    except ValueError:
        return None
    text = relative.as_posix()
    return "" if text == "." else text
