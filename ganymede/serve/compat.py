"""jupyter-collaboration's server-side surface, answered by Ganymede's rooms.

Extensions written for jupyter-collaboration (or jupyter-server-documents, which copies its
surface) find documents on the server through a few objects and events, and Ganymede keeps
both those extensions disabled. This module gives them the same objects over Ganymede's own
rooms: one room engine, seen through the names the extensions look for.

- ``settings["jupyter_server_ydoc"]``: ``get_document(room_id=… | path=…, copy=…)`` (the
  room's live document, or a copy), ``ywebsocket_server.get_room()`` / ``room_exists()`` (a
  room's ``_document``, ``ydoc`` and ``awareness``), ``yroom_manager`` (the same rooms as
  jupyter-server-documents names them: ``has_room``, ``get_room``, ``get_jupyter_ydoc``,
  ``get_awareness``, ``add_stop_callback``), ``disable_rtc``;
- ``settings["yroom_manager"]``, that ``yroom_manager`` again, where jupyter-ai's tools look
  for it whenever jupyter-server-documents is installed;
- ``settings["file_id_manager"]``: ``index``, ``get_id`` and ``get_path`` over Ganymede's ids,
  taking API paths or absolute paths under the root;
- the ``jupyter_collaboration/session/v1`` events (``initialize`` with "Room initialized"
  when a room opens, ``clean`` when it closes) and ``awareness/v1`` events (``join``,
  ``leave``), emitted through jupyter_server's event logger, whose schemas, with ``fork/v1``,
  are registered here;
- a server extension entry named ``jupyter_server_ydoc``, enabled, in jupyter_server's
  extension manager: jupyterlab-chat decides collaboration is on only if it finds one, and
  otherwise serves chats over its own websocket and tells the page RTC is off;
- JupyterLab's page config without jupyter-server-documents' frontend, which would open every
  document through that extension's server side, kept disabled here.

A room's ``awareness`` is a pycrdt ``Awareness`` on the room's document: what a server-side
writer sets in it (jupyterlab-chat's "writing" indicator, jupyter-ai's cursors) goes to the
room's clients as a client's presence does, and its ``states`` hold every client's.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from jupyter_events import EventLogger
from jupyter_server.extension.manager import ExtensionManager, ExtensionPackage
from jupyter_ydoc.ybasedoc import YBaseDoc
from pycrdt import Awareness, Doc

from ganymede.core import normalize_api_path
from ganymede.errors import FrameError, PathError
from ganymede.fileid import FileIdStore, api_path_of, os_path_of
from ganymede.serve.rooms import RoomManager
from ganymede.serve.rooms.presence import AwarenessRoom, Client, RoomHold
from ganymede.serve.rooms.room import DocumentRoom
from ganymede.serve.service import detached_task

YDOC_EXTENSION = "jupyter_server_ydoc"
DOCUMENTS_EXTENSION = "jupyter_server_documents"
FILEID_EXTENSION = "jupyter_server_fileid"
COLLIDING_EXTENSIONS = (YDOC_EXTENSION, FILEID_EXTENSION, DOCUMENTS_EXTENSION)
"""Their endpoints (collaboration rooms, file ids, execution into rooms), kernel websocket and
session manager would collide with Ganymede's."""
GLOBAL_AWARENESS = "JupyterLab:globalAwareness"
KEPT_OUT_LAB_EXTENSIONS = ("@jupyter-ai-contrib/server-documents",)
"""JupyterLab extensions of colliding server extensions: jupyter-server-documents' disables the
docprovider's document factory, cell executor, timeline and fork manager (through its package
metadata) and puts its own in their place, which talk to its server side, not to rooms."""
DISABLED_EXTENSIONS = "disabledExtensions"

_SCHEMAS = "https://schema.jupyter.org/jupyter_collaboration"
SESSION_EVENTS = f"{_SCHEMAS}/session/v1"
AWARENESS_EVENTS = f"{_SCHEMAS}/awareness/v1"
FORK_EVENTS = f"{_SCHEMAS}/fork/v1"
ROOM_INITIALIZED = "Room initialized"  # jupyter-ai's router acts on exactly this message

_LEVELS = ["INFO", "DEBUG", "WARNING", "ERROR", "CRITICAL"]
SCHEMAS: list[dict[str, Any]] = [
    {
        "$id": SESSION_EVENTS,
        "version": "1",
        "title": "Collaborative session events",
        "personal-data": True,
        "description": "A room's life: opened on its file, loaded, saved, taken in, closed.",
        "type": "object",
        "required": ["level", "room", "path"],
        "properties": {
            "level": {"enum": _LEVELS},
            "room": {"type": "string", "description": "format:type:fileId"},
            "path": {"type": "string", "description": "The file's API path."},
            "store": {"type": "string"},
            "action": {"enum": ["initialize", "load", "save", "overwrite", "clean"]},
            "msg": {"type": "string"},
        },
    },
    {
        "$id": AWARENESS_EVENTS,
        "version": "1",
        "title": "Collaborative awareness events",
        "personal-data": True,
        "description": "Someone joined or left a room.",
        "type": "object",
        "required": ["roomid", "username", "action"],
        "properties": {
            "roomid": {"type": "string"},
            "username": {"type": "string"},
            "action": {"enum": ["join", "leave"]},
            "msg": {"type": "string"},
        },
    },
    {
        "$id": FORK_EVENTS,
        "version": "1",
        "title": "Collaborative fork events",
        "personal-data": True,
        "description": "A fork of a room was created or deleted.",
        "type": "object",
        "required": ["fork_roomid", "fork_info", "username", "action"],
        "properties": {
            "fork_roomid": {"type": "string"},
            "fork_info": {
                "type": "object",
                "required": ["root_roomid", "synchronize", "title", "description"],
                "properties": {
                    "root_roomid": {"type": "string"},
                    "synchronize": {"type": "boolean"},
                    "title": {"type": "string"},
                    "description": {"type": "string"},
                },
            },
            "username": {"type": "string"},
            "action": {"enum": ["create", "delete"]},
        },
    },
]


class FileIdManager:
    """jupyter-server-fileid's ``file_id_manager``, over Ganymede's ids.

    Paths may be API paths or absolute paths under the root (jupyter-ai's tools pass those);
    a path outside the root has no id.
    """

    def __init__(self, file_ids: FileIdStore) -> None:
        self._file_ids = file_ids

    @property
    def root_dir(self) -> str:
        return str(self._file_ids.root)

    def index(self, path: str) -> str | None:
        """The file's id, given one if it has none; a path that does not exist yet gets one
        too, as jupyter-server-fileid's default manager gives it."""
        api_path = self._api_path(path)
        return None if api_path is None else self._file_ids.index(api_path, missing_ok=True)

    def get_id(self, path: str) -> str | None:
        api_path = self._api_path(path)
        return None if api_path is None else self._file_ids.get_id(api_path)

    def get_path(self, file_id: str) -> str | None:
        return self._file_ids.get_path(file_id)

    def _api_path(self, path: str) -> str | None:
        if Path(path).is_absolute():
            return api_path_of(self._file_ids.root, Path(path))
        try:
            os_path_of(self._file_ids.root, path)
        except PathError:
            return None
        return normalize_api_path(path)


class RoomView:
    """One open room as jupyter-collaboration's ``YRoom`` and jupyter-server-documents'
    ``YRoom`` show it to extensions."""

    def __init__(self, room: AwarenessRoom, log: logging.Logger) -> None:
        self.room_id = room.name
        self._room = room
        self._log = log
        self._document: YBaseDoc | None = (
            room.hand_out() if isinstance(room, DocumentRoom) else None
        )
        self.ydoc = self._document.ydoc if self._document is not None else Doc()
        self.awareness = Awareness(self.ydoc)
        present = room.presence()
        if present is not None:
            self.awareness.apply_awareness_update(present, "room")
        room.listen_to_presence(
            lambda payload: self.awareness.apply_awareness_update(payload, "room")
        )
        self.awareness.observe(self._on_awareness)
        if self._document is not None and self._document.awareness is None:
            self._document.awareness = self.awareness
        self._renewing = detached_task(self.awareness.start())
        self._stop_callbacks: list[Callable[[], Any]] = []

    async def get_jupyter_ydoc(self, on_reset: Callable[[YBaseDoc], Any] | None = None) -> YBaseDoc:
        """The room's live document (``on_reset`` is never called: a room is never reset)."""
        if self._document is None:
            raise LookupError(f"{self.room_id} holds no document, only presence")
        return self._document

    def get_awareness(self, on_reset: Callable[[Awareness], Any] | None = None) -> Awareness:
        return self.awareness

    def add_stop_callback(self, callback: Callable[[], Any]) -> None:
        """``callback`` runs once the room has closed."""
        self._stop_callbacks.append(callback)

    def closed(self) -> None:
        self._renewing.cancel()
        for callback in self._stop_callbacks:
            try:
                callback()
            except Exception:
                self._log.exception("%s: a callback on its closing failed", self.room_id)

    def _on_awareness(self, topic: str, changes: tuple[dict[str, Any], Any]) -> None:
        """What the server itself set goes to the room's clients (on ``update``, which also
        renews the presence's clock and keeps clients from timing it out); the empty state
        every awareness starts with is no presence to show."""
        if topic != "update" or changes[1] != "local" or not self.awareness.get_local_state():
            return
        payload = self.awareness.encode_awareness_update([self.awareness.client_id])
        try:
            self._room.announce(payload)
        except FrameError:
            self._log.warning("%s: a server-side presence that is not JSON", self.room_id)


class YRoomManager:
    """The open rooms, as jupyter-server-documents' ``yroom_manager`` and jupyter-
    collaboration's ``ywebsocket_server`` name them; rooms open only when a client or
    ``get_document(create=True)`` opens them."""

    def __init__(self, rooms: RoomManager, log: logging.Logger) -> None:
        self._rooms = rooms
        self._log = log
        self._views: dict[AwarenessRoom, RoomView] = {}

    def has_room(self, room_id: str) -> bool:
        return self._rooms.room(room_id) is not None

    def get_room(self, room_id: str) -> RoomView | None:
        room = self._rooms.room(room_id)
        return None if room is None else self.view(room)

    def view(self, room: AwarenessRoom) -> RoomView:
        view = self._views.get(room)
        if view is None:
            view = self._views[room] = RoomView(room, self._log)
        return view

    def forget(self, room: AwarenessRoom) -> None:
        view = self._views.pop(room, None)
        if view is not None:
            view.closed()


class WebsocketServer:
    """jupyter-collaboration's ``ywebsocket_server``: its ``get_room`` is a coroutine that
    fails for a room not open."""

    def __init__(self, manager: YRoomManager) -> None:
        self._manager = manager

    def room_exists(self, room_id: str) -> bool:
        return self._manager.has_room(room_id)

    async def get_room(self, room_id: str) -> RoomView:
        view = self._manager.get_room(room_id)
        if view is None:
            raise LookupError(f"no room {room_id} is open")
        return view


class CollaborationAPI:
    """``settings["jupyter_server_ydoc"]``: what extensions call on jupyter-collaboration."""

    disable_rtc = False

    def __init__(self, rooms: RoomManager, file_ids: FileIdManager, log: logging.Logger) -> None:
        self._rooms = rooms
        self.fileid_manager = file_ids
        self.yroom_manager = YRoomManager(rooms, log)
        self.ywebsocket_server = WebsocketServer(self.yroom_manager)

    async def get_document(
        self,
        *,
        path: str | None = None,
        content_type: str | None = None,
        file_format: Literal["json", "text"] | None = None,
        room_id: str | None = None,
        copy: bool = True,
        create: bool = False,
    ) -> YBaseDoc | None:
        """The document of a room named by ``room_id``, or by ``path``, ``content_type`` and
        ``file_format``: the room's live document, or with ``copy`` a document of its type
        holding what it holds now, which nothing connects to the room. None when no such room
        is open, unless ``create`` opens it (it then closes after the grace period, as a room
        its clients left); PathError for a path outside the root."""
        if (room_id is None) == (path is None or content_type is None or file_format is None):
            raise ValueError("give either room_id, or path, content_type and file_format")
        if room_id is None:
            assert path is not None
            file_id = self.fileid_manager.index(path)
            if file_id is None:
                raise PathError(path, "is outside the root")
            room_id = f"{file_format}:{content_type}:{file_id}"
        room = self._rooms.room(room_id)
        if room is None and create:
            hold = RoomHold()
            room = await self._rooms.join(room_id, hold)
            self._rooms.leave(room, hold)
        if not isinstance(room, DocumentRoom):
            return None
        view = self.yroom_manager.view(room)
        if not copy:
            return await view.get_jupyter_ydoc()
        document = Doc()
        document.apply_update(room.document.doc.get_update())
        return room.document.kind.new_shared(document)


class CollaborationEvents:
    """Emits jupyter-collaboration's session and awareness events for Ganymede's rooms."""

    def __init__(self, api: CollaborationAPI, events: EventLogger, log: logging.Logger) -> None:
        self._api = api
        self._events = events
        self._log = log

    def opened(self, room: AwarenessRoom) -> None:
        if isinstance(room, DocumentRoom):
            self._session(room, "initialize", ROOM_INITIALIZED)

    def closed(self, room: AwarenessRoom) -> None:
        self._api.yroom_manager.forget(room)
        if isinstance(room, DocumentRoom):
            self._session(room, "clean", "Room deleted.")

    def joined(self, room: AwarenessRoom, client: Client) -> None:
        self._awareness(room, client, "join")

    def left(self, room: AwarenessRoom, client: Client) -> None:
        self._awareness(room, client, "leave")

    def _session(self, room: DocumentRoom, action: str, message: str) -> None:
        data = {
            "level": "INFO",
            "room": room.name,
            "path": room.document.path,
            "action": action,
            "msg": message,
        }
        self._emit(SESSION_EVENTS, data)

    def _awareness(self, room: AwarenessRoom, client: Client, action: str) -> None:
        """Only for people's connections (not the server's own holds), and not in the global
        awareness room, as jupyter-collaboration does."""
        username = getattr(client, "user_name", None)
        if username is None or room.name == GLOBAL_AWARENESS:
            return
        self._emit(AWARENESS_EVENTS, {"roomid": room.name, "username": username, "action": action})

    def _emit(self, schema_id: str, data: dict[str, Any]) -> None:
        """A listener's failure is logged by the event logger; anything else here must not
        stop a room opening or closing."""
        try:
            self._events.emit(schema_id=schema_id, data=data)
        except Exception:
            self._log.exception("ganymede: could not emit %s", schema_id)


def fork_event_emitter(events: EventLogger) -> Callable[[dict[str, Any]], None]:
    """Emits a fork's ``create``/``delete`` event with jupyter-collaboration's schema."""

    def emit(data: dict[str, Any]) -> None:
        events.emit(schema_id=FORK_EVENTS, data=data)

    return emit


def provide(
    settings: dict[str, Any],
    rooms: RoomManager,
    file_ids: FileIdStore,
    events: EventLogger,
    extensions: ExtensionManager,
    log: logging.Logger,
) -> CollaborationAPI:
    """Put the surface in place: settings, event schemas, the observer on the rooms, and
    ``jupyter_server_ydoc`` as an enabled extension (an entry with no code of its own: the
    rooms behind it are Ganymede's), unless the real one was enabled after all, which its own
    entry then keeps saying."""
    api = CollaborationAPI(rooms, FileIdManager(file_ids), log)
    settings[YDOC_EXTENSION] = api
    settings["yroom_manager"] = api.yroom_manager
    settings["file_id_manager"] = api.fileid_manager
    for schema in SCHEMAS:
        events.register_event_schema(schema)
    rooms.observe(CollaborationEvents(api, events, log))
    settings["page_config_hook"] = _keeping_lab_extensions_out(settings.get("page_config_hook"))
    present = extensions.extensions.get(YDOC_EXTENSION)
    if present is None or not present.enabled:
        stand_in = ExtensionPackage(name=YDOC_EXTENSION, enabled=False)
        stand_in.enabled = True  # set after: enabling on creation would import the real one
        extensions.extensions[YDOC_EXTENSION] = stand_in
        log.debug("ganymede: rooms stand in for %s's server API", YDOC_EXTENSION)
    return api


def set_colliding_aside(extensions: ExtensionManager, log: logging.Logger) -> list[str]:
    """Keep the extensions that would collide with Ganymede's from linking, loading or stopping,
    whether or not a config file enabled them (jupyter-collaboration's does), and say so once.

    Called while extensions link, in name order: these all sort after Ganymede's, so none has
    linked yet. Each is replaced by a disabled entry rather than removed, since the manager goes
    on linking by the names it listed; a disabled entry has no app whose ``stop_extension``
    jupyter_server could call at shutdown (it calls every listed extension's, linked or not).
    The names installed are returned."""
    for name in COLLIDING_EXTENSIONS:
        present = extensions.extensions.get(name)
        if present is not None and (present.enabled or present.extension_points):
            extensions.extensions[name] = ExtensionPackage(name=name, enabled=False)
    installed = [name for name in COLLIDING_EXTENSIONS if importlib.util.find_spec(name)]
    if installed:
        log.info(
            "ganymede: %s installed and kept disabled: Ganymede's rooms, file ids and kernel "
            "websocket serve in their place",
            ", ".join(installed),
        )
    return installed


PageConfigHook = Callable[[Any, dict[str, Any]], dict[str, Any]]


def _keeping_lab_extensions_out(earlier: PageConfigHook | None) -> PageConfigHook:
    """jupyterlab_server's ``page_config_hook``, after any an earlier extension set."""

    def hook(handler: Any, page_config: dict[str, Any]) -> dict[str, Any]:
        from jupyterlab_server.config import get_federated_extensions

        if earlier is not None:
            page_config = earlier(handler, page_config)
        lab = handler.extensionapp
        installed = get_federated_extensions(lab.extra_labextensions_path + lab.labextensions_path)
        metadata = {name: data.get("jupyterlab", {}) for name, data in installed.items()}
        return with_lab_extensions_kept_out(page_config, metadata)

    return hook


def with_lab_extensions_kept_out(
    page_config: dict[str, Any], installed: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The page config with the installed ``KEPT_OUT_LAB_EXTENSIONS`` disabled, and the plugins
    only their metadata disabled enabled again (one another active extension disables too stays
    disabled). ``installed`` maps each federated extension to its package's ``jupyterlab``
    section."""
    kept_out = [name for name in KEPT_OUT_LAB_EXTENSIONS if name in installed]
    if not kept_out:
        return page_config
    disabled: list[str] = list(page_config.get(DISABLED_EXTENSIONS, []))
    released = {
        plugin for name in kept_out for plugin in installed[name].get(DISABLED_EXTENSIONS, [])
    }
    for name, metadata in installed.items():
        if name not in kept_out and name not in disabled:
            released.difference_update(metadata.get(DISABLED_EXTENSIONS, []))
    disabled = [plugin for plugin in disabled if plugin not in released]
    disabled += [name for name in kept_out if name not in disabled]
    return {**page_config, DISABLED_EXTENSIONS: disabled}
