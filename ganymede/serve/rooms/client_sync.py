"""Bringing each client of a document room in sync with it.

A client's first SyncStep1 is judged (``admission``): one whose history grew from the room is
answered at once, one bringing history of its own is heard out first, and one that cannot have
grown from it is told to reload. Only an introduced client's updates reach the document. The
answer to a state vector is kept a moment and sent again to every client asking with the same
(a class joining together), rather than a copy of the whole document for each.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ganymede.errors import FrameError
from ganymede.serve.rooms import admission, protocol
from ganymede.serve.rooms.document import RoomDocument
from ganymede.serve.rooms.presence import Client
from ganymede.serve.service import detached_call_later

SHARED_ANSWER_SECONDS = 1.0
"""How long the answer to one state vector is kept for the next client asking with the same
(a class joining together asks with the same empty one); a document change drops it sooner."""

ApplyUpdate = Callable[[Client, bytes], None]
"""The room applying a client's update to its document (FrameError if it is not one)."""


class ClientSync:
    """Where each client of one room stands in its sync, and the answer kept for the next."""

    def __init__(
        self, name: str, document: RoomDocument, log: logging.Logger, apply: ApplyUpdate
    ) -> None:
        self.name = name
        self.document = document
        self.log = log
        self.apply = apply
        self._introduced: set[Client] = set()
        # Clients whose history is being heard, with the state vector their sync then answers.
        self._hearing: dict[Client, bytes] = {}
        self._shared_answer: tuple[bytes, bytes] | None = None  # (state vector, SyncStep2)
        self._shared_answer_expiry: asyncio.TimerHandle | None = None

    def state_vector(self, client: Client, state: bytes) -> None:
        """A client's SyncStep1."""
        if client in self._introduced:
            self._answer(client, state)
        elif client in self._hearing:
            self._hearing[client] = state  # answered once its history is heard
        else:
            self._first_state_vector(client, state)

    def update(self, client: Client, message: protocol.SyncStep2 | protocol.SyncUpdate) -> None:
        """A client's SyncStep2 or update; FrameError before its SyncStep1."""
        if client in self._introduced:
            self.apply(client, message.update)
        elif client in self._hearing:
            self._hear_history(client, message)
        else:
            raise FrameError("a document update before the client's SyncStep1")

    def leave(self, client: Client) -> None:
        self._introduced.discard(client)
        self._hearing.pop(client, None)

    def _answer(self, client: Client, state: bytes) -> None:
        """Send the client what its state vector lacks (FrameError if it is not one)."""
        client.send(self._shared_answer_for(state))

    def _first_state_vector(self, client: Client, state: bytes) -> None:
        """Sync a client whose history grew from this room, refuse one that cannot have, and
        hear out one holding history of its own before either (see ``admission``)."""
        own_id = self.document.doc.client_id
        own_clock = protocol.decode_state_vector(self.document.doc.get_state()).get(own_id, 0)
        clocks = protocol.decode_state_vector(state)
        verdict = admission.judge_state_vector(clocks, own_id, own_clock)
        if verdict is admission.Verdict.SYNC:
            self._introduced.add(client)
            self._answer(client, state)
        elif verdict is admission.Verdict.HEAR_HISTORY:
            self._hearing[client] = state
        else:
            self._refuse_history(client, "it counts more of the room's own changes than it made")

    def _hear_history(
        self, client: Client, message: protocol.SyncStep2 | protocol.SyncUpdate
    ) -> None:
        """Judge an update from a client whose history is being heard.

        Its SyncStep2 answers the room's SyncStep1, so it holds all the client has that the
        room lacks: harmless, it is applied and the client synced. An update before it is
        applied if harmless too, but the client waits for its SyncStep2 all the same.
        """
        try:
            changes = admission.history_changes(self.document.doc, message.update)
        except ValueError as error:
            raise FrameError(f"not a Yjs update: {error}") from None
        if admission.judge_history(changes) is admission.Verdict.REFUSE:
            self._refuse_history(client, changes.why_refused())
            return
        self.apply(client, message.update)
        if isinstance(message, protocol.SyncStep2):
            state = self._hearing.pop(client)
            self._introduced.add(client)
            self._answer(client, state)

    def _refuse_history(self, client: Client, why: str) -> None:
        """Merging the client's history would duplicate or bring back content: it is told to
        reload, as after a server restart (JupyterLab offers it in a dialog)."""
        self._hearing.pop(client, None)
        self.log.warning(
            "room %s: a client brought history from an earlier room (%s); told to reload",
            self.name,
            why,
        )
        client.close(protocol.CloseCode.UNSUPPORTED_DATA, protocol.unknown_session_reason(None))

    def _shared_answer_for(self, state: bytes) -> bytes:
        """The SyncStep2 for a client holding ``state``: one frame for every client that asks
        with the same state vector while the document stays as it is, rather than a copy of
        the whole document for each of a hundred clients joining at once."""
        if self._shared_answer is not None and self._shared_answer[0] == state:
            return self._shared_answer[1]
        try:
            missing = self.document.doc.get_update(state)
        except ValueError as error:
            raise FrameError(f"not a Yjs state vector: {error}") from None
        answer = protocol.sync_step2(missing)
        self.forget_answer()
        self._shared_answer = (state, answer)
        self._shared_answer_expiry = detached_call_later(SHARED_ANSWER_SECONDS, self.forget_answer)
        return answer

    def forget_answer(self) -> None:
        """The document changed (or packs away, or closes): the answer kept is stale."""
        self._shared_answer = None
        if self._shared_answer_expiry is not None:
            self._shared_answer_expiry.cancel()
            self._shared_answer_expiry = None
