"""``KEY=PATH`` arguments and what they do to one notebook's grant: pure, shared by every door.

Granting a path adds it to the notebook's own list for that key; the first path granted for a
key starts the notebook's own list, which then replaces the defaults' for that key (so
``read=journal`` narrows the default whole-root read to ``journal``, and ``run=reports`` adds a
run the defaults lack). Revoking a path removes it from that list; revoking a key without a
path (``read``, ``edit_self``) makes it follow the defaults again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ganymede.errors import PathError, UsageError
from ganymede.grant.model import KEYS, NotebookGrant
from ganymede.grant.paths import minimal, normalize_granted

BOOLEANS = {"true": True, "false": False}


@dataclass(frozen=True)
class Change:
    """One ``KEY=VALUE`` argument; ``value`` is None for a bare key (revoking only)."""

    key: str
    value: str | None


def parse_change(text: str, revoking: bool = False) -> Change:
    """``read=journal``, ``run=``, ``edit_self=false``; a bare key only when revoking."""
    key, has_value, value = text.partition("=")
    if key not in KEYS:
        raise UsageError(f"{text!r}: expected KEY=PATH with KEY one of {', '.join(KEYS)}")
    if not has_value:
        if revoking:
            return Change(key, None)
        raise UsageError(
            f"{text!r}: expected {key}=PATH"
            if key != "edit_self"
            else f"{text!r}: expected edit_self=true or edit_self=false"
        )
    if key == "edit_self":
        if value.lower() not in BOOLEANS:
            raise UsageError(f"{text!r}: edit_self must be true or false")
        return Change(key, value.lower())
    try:
        return Change(key, normalize_granted(value))
    except PathError as error:
        raise UsageError(f"{text!r}: {error.reason}") from None


def granting(own: NotebookGrant, changes: list[Change]) -> NotebookGrant:
    """``own`` with every change's path added (or edit_self set)."""
    for change in changes:
        if change.key == "edit_self":
            own = replace(own, edit_self=BOOLEANS[change.value or ""])
        else:
            current: tuple[str, ...] = getattr(own, change.key) or ()
            own = replace(own, **{change.key: minimal((*current, change.value or ""))})
    return own


def revoking(own: NotebookGrant, changes: list[Change]) -> NotebookGrant:
    """``own`` without the changes' paths; a bare key (or any edit_self) back to the defaults.

    Only a path granted as such can be revoked: taking ``journal/x`` out of a ``journal`` grant
    would need a hole in it, which grants do not have.
    """
    for change in changes:
        if change.value is None or change.key == "edit_self":
            own = own.without(change.key)
            continue
        current: tuple[str, ...] = getattr(own, change.key) or ()
        if change.value not in current:
            shown = ", ".join(repr(path) for path in current) or "none of its own"
            raise UsageError(
                f"{change.key}={change.value} is not granted as such (its {change.key} paths: "
                f"{shown})"
            )
        own = replace(own, **{change.key: tuple(p for p in current if p != change.value)})
    return own
