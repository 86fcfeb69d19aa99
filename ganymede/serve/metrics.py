"""Ganymede's Prometheus metrics, served with jupyter_server's own on ``/metrics``.

Defined once here, in prometheus_client's default registry (the one jupyter_server's handler
exports); the sites that move them only increment. Module-level, as jupyter_server's are: an
import happens once per process, so two servers in one process share them rather than register
them twice (which prometheus_client refuses).

Names follow https://prometheus.io/docs/practices/naming/ (counters get ``_total`` from
prometheus_client). Label values come from short fixed sets: a document type, a save status, a
host method this server has (``other`` for anything a kernel makes up) and an outcome.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import Counter, Gauge, Histogram

from ganymede.serve.rooms.protocol import RoomName

if TYPE_CHECKING:
    from ganymede.serve.rooms.presence import AwarenessRoom, Client

PRESENCE_ROOM = "awareness"
"""The ``type`` of a room that relays presence only (``JupyterLab:globalAwareness``)."""

ROOMS_OPEN = Gauge(
    "ganymede_rooms_open",
    "Rooms open, by document type (notebook, file, chat, …; awareness for presence only)",
    ["type"],
)
ROOM_CLIENTS = Gauge("ganymede_room_clients", "Websocket clients connected to rooms")
ROOM_SAVES = Counter(
    "ganymede_room_saves", "Saves of a room to its file, by the status answered", ["status"]
)
ROOM_SAVE_SECONDS = Histogram(
    "ganymede_room_save_duration_seconds",
    "Seconds a room's save took, merging in a change on disk included",
)
FILE_CHANGES_TAKEN_IN = Counter(
    "ganymede_room_file_changes_taken_in",
    "Changes another program made to a room's file, merged into the room",
)
MERGE_CONFLICTS = Counter(
    "ganymede_room_merge_conflicts",
    "Parts of a document both the room and the file changed, where the file won",
)
CLIENTS_TOO_FAR_BEHIND = Counter(
    "ganymede_room_clients_closed_too_far_behind",
    "Room clients closed 1008 (policy violation) for falling too far behind",
)
HOST_CALLS = Counter(
    "ganymede_host_calls",
    "Host API calls from kernels, by method and outcome (ok, or the error code)",
    ["method", "outcome"],
)
DOCUMENTS_PACKED = Gauge(
    "ganymede_room_documents_packed",
    "Open rooms whose idle document is packed away, costing its packed update until used",
)
AGENT_SESSIONS = Gauge("ganymede_agent_sessions_open", "Agent sessions open")


def room_type(name: str) -> str:
    """The ``type`` label of the room called ``name``."""
    return RoomName.parse(name).type or PRESENCE_ROOM


class RoomCounts:
    """Counts rooms as they open and close (a ``RoomObserver`` of the room manager)."""

    def opened(self, room: AwarenessRoom) -> None:
        ROOMS_OPEN.labels(room_type(room.name)).inc()

    def closed(self, room: AwarenessRoom) -> None:
        ROOMS_OPEN.labels(room_type(room.name)).dec()

    def joined(self, room: AwarenessRoom, client: Client) -> None:
        """Clients are counted where websockets connect: joins include the server's holds."""

    def left(self, room: AwarenessRoom, client: Client) -> None:
        """See ``joined``."""


def count_host_call(method: str, outcome: str) -> None:
    """One answered host call (the responder's ``on_answer``)."""
    HOST_CALLS.labels(method, outcome).inc()
