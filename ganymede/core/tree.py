"""Which files under the root are notebooks and directories a caller may see.

One rule for listing and searching: hidden entries (dot-names, which covers
``.ipynb_checkpoints``), names an API path cannot spell (a backslash), broken symlinks and
symlinks whose target leaves the root are skipped, so everything shown can also be read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ganymede.core.paths import join_api_path

NOTEBOOK_SUFFIX = ".ipynb"


@dataclass(frozen=True)
class Entry:
    """A visible notebook or directory: its API path and where it really lives.

    ``location`` is a plain string: a search walks thousands of entries, and making a ``Path``
    of each costs more than the stat that follows; ``real`` makes one for those who need it.
    """

    api_path: str
    location: str
    is_dir: bool

    @property
    def name(self) -> str:
        return self.api_path.rpartition("/")[2]

    @property
    def real(self) -> Path:
        return Path(self.location)


def visible_entries(real_root: Path, directory: str, real_dir: Path | str) -> list[Entry]:
    """The notebooks and directories directly in ``real_dir`` (the API path ``directory``).

    An OSError on ``real_dir`` itself is the caller's to report; trouble with one entry only
    hides that entry.
    """
    found: list[Entry] = []
    with os.scandir(real_dir) as scan:
        for item in scan:
            entry = _visible(real_root, directory, item)
            if entry is not None:
                found.append(entry)
    return found


def _visible(real_root: Path, directory: str, item: os.DirEntry[str]) -> Entry | None:
    name = item.name
    if name.startswith(".") or "\\" in name:
        return None
    try:
        is_dir = item.is_dir()
        if not is_dir and not (name.endswith(NOTEBOOK_SUFFIX) and item.is_file()):
            return None
        location = item.path
        if item.is_symlink():
            real = Path(location).resolve(strict=True)
            if not real.is_relative_to(real_root):
                return None
            location = str(real)
    except (OSError, RuntimeError):  # broken link, loop, or vanished while we looked
        return None
    return Entry(join_api_path(directory, name), location, is_dir)


def walk_notebooks(real_root: Path, directory: str, real_dir: Path) -> list[Entry]:
    """Every visible notebook under ``real_dir``, recursively, sorted by API path.

    A directory reached twice through symlinks is walked once; unreadable subdirectories are
    skipped, since one bad corner must not hide the rest of the tree.
    """
    notebooks = list(_walk(real_root, directory, str(real_dir), seen=set()))
    notebooks.sort(key=lambda entry: entry.api_path)
    return notebooks


def _walk(real_root: Path, directory: str, real_dir: str, seen: set[str]) -> Iterator[Entry]:
    if real_dir in seen:
        return
    seen.add(real_dir)
    try:
        entries = visible_entries(real_root, directory, real_dir)
    except OSError:
        return
    for entry in entries:
        if entry.is_dir:
            yield from _walk(real_root, entry.api_path, entry.location, seen)
        else:
            yield entry
