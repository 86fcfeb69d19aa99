"""Who is present in a room, as far as the relayed awareness frames tell.

The room relays awareness frames verbatim; it keeps this ledger only to do what y-websocket's
server does for its peers: show a newcomer everyone already present, and, when a connection
drops without saying goodbye, tell the others its users left (rather than letting their cursors
linger until the 30 s awareness timeout). Pure bookkeeping, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Hashable

from ganymede.serve.rooms.protocol import AwarenessEntry, encode_awareness

LEFT = "null"
USER_NAME_KEYS = ("display_name", "name", "username")
"""Where JupyterLab (and other frontends) put a person's name in awareness ``user``."""


class AwarenessLedger:
    """The latest awareness entry of every user, and which connection last spoke for it.

    A user follows the connection that spoke for it last, so a browser that reconnects before
    its old socket is noticed dead does not vanish when the old one is finally dropped.
    """

    def __init__(self) -> None:
        self._entries: dict[int, AwarenessEntry] = {}
        self._owners: dict[int, Hashable] = {}
        self._pinned: set[int] = set()

    def record(
        self, owner: Hashable, entries: tuple[AwarenessEntry, ...], *, pin: bool = False
    ) -> bool:
        """Take in the entries ``owner``'s connection relayed; a ``null`` state means gone.
        Whether anyone's presence moved: someone came, or a state changed (a cursor, a
        selection). Leaving moves nothing, and nor does the renewal every client sends to stay
        present, the same state under a new clock.

        ``pin``: the entries are the server's own (an agent's). Only the server speaks for them:
        a browser relaying them back (y-websocket providers re-send every state they hear, and
        the removals their timeouts make) changes nothing, so ``owner`` leaving still announces
        them gone and a browser's timeout does not hide them from newcomers.
        """
        moved = False
        for entry in entries:
            if not pin and entry.client_id in self._pinned:
                continue
            if entry.gone:
                self._entries.pop(entry.client_id, None)
                self._owners.pop(entry.client_id, None)
                self._pinned.discard(entry.client_id)
                continue
            known = self._entries.get(entry.client_id)
            moved |= known is None or known.state != entry.state
            self._entries[entry.client_id] = entry
            self._owners[entry.client_id] = owner
            if pin:
                self._pinned.add(entry.client_id)
        return moved

    def has(self, client_id: int) -> bool:
        return client_id in self._entries

    def user_name(self, owner: Hashable) -> str | None:
        """The name of the person ``owner``'s connection speaks for, if its awareness says."""
        for client_id, known in self._owners.items():
            if known is owner:
                name = user_name_of(self._entries[client_id].state)
                if name:
                    return name
        return None

    def present(self) -> bytes | None:
        """An awareness payload with everyone present, or None when nobody is."""
        if not self._entries:
            return None
        return encode_awareness(list(self._entries.values()))

    def forget(self, owner: Hashable) -> bytes | None:
        """The payload announcing that ``owner``'s users left, or None if it had none.

        Each clock moves one past the last seen, so peers accept the removal as newer.
        """
        departed = sorted(client for client, known in self._owners.items() if known is owner)
        departures = []
        for client_id in departed:
            del self._owners[client_id]
            self._pinned.discard(client_id)
            last = self._entries.pop(client_id)
            departures.append(AwarenessEntry(client_id, last.clock + 1, LEFT))
        return encode_awareness(departures) if departures else None


def user_name_of(state: str) -> str | None:
    """The first name an awareness state's ``user`` gives; None for anything else."""
    try:
        parsed = json.loads(state)
    except ValueError:
        return None
    user = parsed.get("user") if isinstance(parsed, dict) else None
    if not isinstance(user, dict):
        return None
    for key in USER_NAME_KEYS:
        name = user.get(key)
        if isinstance(name, str) and name.strip():
            return name.strip()
    return None
