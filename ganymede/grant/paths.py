"""Grant path rules: pure functions over normalized API paths, no file system.

A grant names paths relative to the root, as the contents API does (``""`` is the whole root).
A granted path covers itself and everything below it, matched by whole segments, so
``journal`` covers ``journal/x.ipynb`` but not ``journal-private/x.ipynb``. Symlinks are the
caller's business: ``ganymede.grant.policy`` resolves both sides before asking these rules, so
what they compare is where paths lead, not how they are spelled.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ganymede.core.paths import normalize_api_path
from ganymede.errors import PathError

# "%2F", "%5C" and "%2E" spell a separator or a dot that the contents API would never see
# unencoded; a path carrying one is a confusion (or an attempt) either way.
_ENCODED = re.compile(r"%(2f|5c|2e)", re.IGNORECASE)


def normalize_target(path: str) -> str:
    """A path a kernel asks about, normalized as the contents API would (leading "/" tolerated)."""
    normalized = normalize_api_path(path)
    if _ENCODED.search(path):
        raise PathError(path, "encoded separators or dots not allowed")
    return normalized


def normalize_granted(path: str) -> str:
    """A path a person grants. A leading "/" is refused: it reads as a machine path, and would
    otherwise quietly mean a folder under the root."""
    if isinstance(path, str) and path.startswith("/"):
        raise PathError(path, "absolute path not allowed: give a path relative to the root")
    return normalize_target(path)


def normalize_granted_all(paths: Iterable[str]) -> tuple[str, ...]:
    """Every granted path normalized, sorted, without those another one already covers."""
    return minimal(normalize_granted(path) for path in paths)


def covers(granted: str, path: str) -> bool:
    """``granted`` is ``path`` or a folder above it, by whole segments ("" covers everything)."""
    return granted == "" or path == granted or path.startswith(granted + "/")


def covered(granted: Iterable[str], path: str) -> bool:
    return any(covers(entry, path) for entry in granted)


def minimal(paths: Iterable[str]) -> tuple[str, ...]:
    """The same coverage with no entry inside another, sorted so equal grants compare equal."""
    unique = sorted(set(paths))
    return tuple(path for path in unique if not any(o != path and covers(o, path) for o in unique))


def intersect(left: Iterable[str], right: Iterable[str]) -> tuple[str, ...]:
    """The paths both sides cover: for each pair where one covers the other, the narrower."""
    right_paths = tuple(right)
    both = []
    for a in left:
        for b in right_paths:
            if covers(a, b):
                both.append(b)
            elif covers(b, a):
                both.append(a)
    return minimal(both)
