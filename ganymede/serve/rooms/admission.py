"""Whether the history a client brings may join a room, or would bring back an earlier room's.

Everyone synced with a room holds the room's own changes (its load at least), so a client whose
first SyncStep1 counts them grew from this room, and one that holds nothing has nothing to bring:
both sync at once. A client that holds history without them is one of two kinds, which its state
vector cannot tell apart. It may have written before it synced: a Python model such as
jupyterlab_chat's ``YChat`` sets ``dirty`` in its ``state`` as it is built. Or it learned its
history from a room that has since closed (a tab left open across a restart or past the grace
period), and merging it would duplicate every cell or message, or bring back deleted ones.

What it sends in answer to the room's SyncStep1 tells them apart: everything it holds that the
room lacks. Changes to ``state`` alone are harmless, changes to any other root (cells, messages,
source, objects) are content the room does not hold. So the room holds back its answer until it
has heard that history, and only then syncs the client or tells it to reload.

``judge_state_vector`` and ``judge_history`` decide; ``history_changes`` reads an update on a
scratch copy of the room's document, which it never changes.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pycrdt import Doc, Map, get_state

from ganymede.serve.rooms import protocol

STATE_ROOT = "state"
"""The root holding what the server and the frontend say about the file, not its content."""


class Verdict(enum.Enum):
    SYNC = "sync"
    """The client's history grew from this room (or is none): answer its SyncStep1 now."""
    HEAR_HISTORY = "hear history"
    """The client holds history the room never gave it: its updates decide."""
    REFUSE = "refuse"
    """The client's history would duplicate or bring back content: it must reload."""


@dataclass(frozen=True)
class HistoryChanges:
    """What an update would do to a room's document."""

    roots: frozenset[str]
    """The roots it changes, by name (a root the document lacks and it makes included)."""
    complete: bool
    """False when part of it builds on changes the room never had, which would wait inside the
    document, unseen, for them to arrive."""

    def why_refused(self) -> str:
        """What makes the history unsafe, for the log."""
        content = sorted(self.roots - {STATE_ROOT})
        if content:
            return f"it changes {', '.join(content)}: content the room does not hold"
        return "it builds on changes the room never had"


def judge_state_vector(clocks: Mapping[int, int], own_id: int, own_clock: int) -> Verdict:
    """The verdict on a client's first SyncStep1, holding ``clocks``, in a room whose own
    changes are ``own_clock`` changes of client ``own_id``.

    A client counting more of the room's own changes than the room made learned them from
    another room that used the same client id: refused without waiting for more.
    """
    if not clocks:
        return Verdict.SYNC
    clock = clocks.get(own_id, 0)
    if clock == 0:
        return Verdict.HEAR_HISTORY
    return Verdict.SYNC if clock <= own_clock else Verdict.REFUSE


def judge_history(changes: HistoryChanges) -> Verdict:
    """The verdict on an update from a client whose history is being heard: harmless only when
    it changes ``state`` alone and stands on what the room holds."""
    if changes.complete and changes.roots <= {STATE_ROOT}:
        return Verdict.SYNC
    return Verdict.REFUSE


def history_changes(document: Doc, update: bytes) -> HistoryChanges:
    """What ``update`` would change in ``document``, found by applying it to a copy.

    A root's type matters only to read it; to hear that it changed any type will do, so each
    root of the copy is watched as a map. ValueError if ``update`` is not a Yjs update.
    """
    scratch = Doc()
    scratch.apply_update(document.get_update())
    known = set(scratch.keys())
    changed: set[str] = set()
    watches = [
        (root, root.observe_deep(_noting(name, changed)))
        for name in known
        for root in [scratch.get(name, type=Map)]
    ]
    scratch.apply_update(update)
    for root, subscription in watches:
        root.unobserve(subscription)
    changed |= set(scratch.keys()) - known
    held = protocol.decode_state_vector(scratch.get_state())
    brought = protocol.decode_state_vector(get_state(update))
    complete = all(held.get(client, 0) >= clock for client, clock in brought.items())
    return HistoryChanges(frozenset(changed), complete)


def _noting(name: str, changed: set[str]) -> Callable[[list[Any]], None]:
    def note(events: list[Any]) -> None:
        changed.add(name)

    return note
