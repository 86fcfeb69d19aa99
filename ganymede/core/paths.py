"""API paths: what callers name notebooks with, and how they map onto files under the root.

An API path is what jupyter_server's contents API uses: "/"-separated, relative to the root, ""
for the root itself. Leading and trailing slashes are tolerated ("/a/b.ipynb/" is "a/b.ipynb"),
as the contents API strips them, and "." segments and empty segments are dropped.

Refused, with a PathError saying why:

- ``..`` segments, even when they would stay inside the root (``a/../b``): a path that climbs is
  a mistake or an attack, and grants match whole segments, which ``..`` would defeat;
- drive letters (``C:``), and ``~``: a filesystem path, not an API path. A leading "/" is not
  refused: it is the contents API's own spelling of the root, so "/etc/x" names "etc/x" under
  the root and can never reach the machine's ``/etc``;
- backslashes, on every platform: API paths use "/" only, and a path that means one thing on
  Windows and another on POSIX cannot be matched against grants safely. Files whose names hold
  a backslash are therefore not listed either;
- NUL characters, which no filesystem accepts, and lone surrogates (``"\\udcff"`` from a JSON
  body), which have no UTF-8 form to store or name a file with;
- a name longer than 255 bytes (UTF-8), which no common filesystem can hold: asking the disk
  about one fails with "file name too long" rather than "not found".

``normalize_api_path`` is pure. ``resolve`` adds the filesystem: it follows symlinks and refuses a
path whose real location leaves the real root, so a link inside the root cannot lead outside it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ganymede.errors import PathError

_DRIVE = re.compile(r"^[A-Za-z]:")
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_NAME_BYTES = 255  # NAME_MAX on Linux and the BSDs, and the limit of ext4, APFS and NTFS


def normalize_api_path(path: str) -> str:
    """The canonical form of an API path ("a/b.ipynb", "" for the root), or PathError."""
    if not isinstance(path, str):
        raise PathError(repr(path), "a path must be a string")
    if "\x00" in path:
        raise PathError(path, "NUL character not allowed")
    if _SURROGATE.search(path):
        raise PathError(ascii(path), "lone surrogate not allowed: not valid Unicode")
    if "\\" in path:
        raise PathError(path, "backslash not allowed: API paths are separated by '/'")
    if _DRIVE.match(path) or path.startswith("~"):
        raise PathError(path, "absolute path not allowed: give a path relative to the root")
    segments = [segment for segment in path.split("/") if segment not in ("", ".")]
    if ".." in segments:
        raise PathError(path, "'..' not allowed")
    if any(len(segment.encode()) > MAX_NAME_BYTES for segment in segments):
        raise PathError(path, f"a name longer than {MAX_NAME_BYTES} bytes is not allowed")
    return "/".join(segments)


def resolve(root: Path, api_path: str) -> Path:
    """The real location ``api_path`` names under ``root``; it need not exist.

    Symlinks are followed as far as they exist; PathError when the result leaves the real root.
    """
    normalized = normalize_api_path(api_path)
    real_root = root.resolve()
    try:
        real = real_root.joinpath(*normalized.split("/")).resolve() if normalized else real_root
    except (RuntimeError, OSError) as error:  # a symlink loop; 3.13 raises OSError for it
        raise PathError(normalized, f"cannot be resolved ({error})") from None
    if not real.is_relative_to(real_root):
        raise PathError(normalized, "leaves the root")
    return real


def to_api_path(root: Path, real_path: Path) -> str:
    """The API path of a file by its real location, or PathError when it lies outside the root."""
    real_root = root.resolve()
    real = Path(real_path).resolve()
    if not real.is_relative_to(real_root):
        raise PathError(os.fspath(real_path), "leaves the root")
    return "/".join(real.relative_to(real_root).parts)


def join_api_path(directory: str, name: str) -> str:
    """The API path of ``name`` inside the (normalized) API path ``directory``."""
    return f"{directory}/{name}" if directory else name
