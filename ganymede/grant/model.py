"""What a notebook's kernel may ask the server for, and one notebook's own setting of it.

``Grant`` is what a check uses: every key has a value. ``NotebookGrant`` is what a person set
for one notebook: each key it sets replaces the defaults' value for that key, and each key it
leaves unset follows the defaults (so a notebook can be given ``run`` and still read what the
defaults let it read, or have its ``read`` narrowed and keep the default ``run``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ganymede.errors import PathError, UsageError
from ganymede.grant.paths import intersect, normalize_granted_all

KEYS = ("read", "run", "edit_self")


@dataclass(frozen=True)
class Grant:
    """Normalized API paths the kernel may read and run, and whether it may edit its notebook."""

    read: tuple[str, ...] = ("",)
    run: tuple[str, ...] = ()
    edit_self: bool = True

    def intersect(self, other: Grant) -> Grant:
        """What both allow: a run never widens its caller's grant."""
        return Grant(
            read=intersect(self.read, other.read),
            run=intersect(self.run, other.run),
            edit_self=self.edit_self and other.edit_self,
        )

    def to_json(self) -> dict[str, Any]:
        return {"read": list(self.read), "run": list(self.run), "edit_self": self.edit_self}


NO_GRANT = Grant(read=(), run=(), edit_self=False)
"""A run whose notebook was deleted under it: not even the defaults (it still reads itself)."""


@dataclass(frozen=True)
class NotebookGrant:
    """The keys one notebook's grant sets; None for a key that follows the defaults."""

    read: tuple[str, ...] | None = None
    run: tuple[str, ...] | None = None
    edit_self: bool | None = None

    def over(self, defaults: Grant) -> Grant:
        """The grant in force: this notebook's keys, the defaults' for the rest."""
        return Grant(
            read=defaults.read if self.read is None else self.read,
            run=defaults.run if self.run is None else self.run,
            edit_self=defaults.edit_self if self.edit_self is None else self.edit_self,
        )

    @property
    def empty(self) -> bool:
        return self.read is None and self.run is None and self.edit_self is None

    def without(self, key: str) -> NotebookGrant:
        """This grant with ``key`` following the defaults again."""
        return replace(self, **{_known_key(key): None})

    def to_json(self) -> dict[str, Any]:
        """Only the keys set, so a reader can tell a notebook's own value from a default."""
        data: dict[str, Any] = {}
        if self.read is not None:
            data["read"] = list(self.read)
        if self.run is not None:
            data["run"] = list(self.run)
        if self.edit_self is not None:
            data["edit_self"] = self.edit_self
        return data

    @classmethod
    def from_json(cls, data: Any, where: str) -> NotebookGrant:
        """Parse an HTTP body or a store entry; UsageError naming ``where`` and the bad key."""
        if not isinstance(data, dict):
            raise UsageError(f"{where}: a grant must be an object with read, run, edit_self")
        for key in data:
            if key not in KEYS:
                raise UsageError(f"{where}: unknown key {key!r} (known: {', '.join(KEYS)})")
        edit_self = data.get("edit_self")
        if edit_self is not None and not isinstance(edit_self, bool):
            raise UsageError(f"{where}: edit_self must be true or false")
        return cls(
            read=_paths(data, "read", where),
            run=_paths(data, "run", where),
            edit_self=edit_self,
        )


def grant_from_config(read: list[str], run: list[str], edit_self: bool) -> Grant:
    """The defaults from ``[host]`` (or ``--grant``), normalized like any other grant."""
    return Grant(
        read=normalize_granted_all(read), run=normalize_granted_all(run), edit_self=edit_self
    )


def _paths(data: dict[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise UsageError(f"{where}: {key} must be a list of paths")
    try:
        return normalize_granted_all(value)
    except PathError as error:
        raise UsageError(f"{where}: {key}: {error}") from None


def _known_key(key: str) -> str:
    if key not in KEYS:
        raise UsageError(f"unknown grant key {key!r} (known: {', '.join(KEYS)})")
    return key
