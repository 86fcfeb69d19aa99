"""Where an API path's id row points: the path as spelled under the root, symlinks kept.

``ganymede.core.paths`` says what an API path may be; rows keep the spelled path rather than the
real one so a symlink inside the root is a file of its own. Nothing here reads or writes files
beyond the one resolution that decides whether a path escapes the root.
"""

from __future__ import annotations

from pathlib import Path

from ganymede.core.paths import normalize_api_path
from ganymede.errors import PathError


def os_path_of(root: Path, api_path: str) -> Path:
    """The file system path an API path names under ``root`` (itself already resolved).

    The returned path keeps symlinks as written (a link is a file of its own), but a path whose
    target resolves outside the root is refused.
    """
    relative = normalize_api_path(api_path)
    candidate = root / relative if relative else root
    try:
        real = candidate.resolve()
    except (RuntimeError, OSError) as error:  # a symlink loop; 3.13 raises OSError for it
        raise PathError(api_path, f"cannot be resolved ({error})") from None
    if not real.is_relative_to(root):
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
