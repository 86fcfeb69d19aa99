"""Document rooms: notebooks and text files edited live by several clients at once.

``handlers`` speaks the wire contract of JupyterLab's collaboration frontend; ``manager`` opens
and closes rooms: a ``presence`` room only relays who is there, a document ``room`` holds a
``document`` (the shared ydoc) loaded from its ``file`` and saved back by ``autosave``; other
programs' changes to the file, noticed by the ``watcher``, are merged in (``mergein``, by
``ganymede.notebook``'s merges, ``threeway`` for document types known only through their
registered ``jupyter_ydoc`` class) and applied as small updates (``patch``); ``protocol`` and
``awareness`` are the pure frame and presence logic.
"""

from __future__ import annotations

from ganymede.serve.rooms.handlers import ROOMS_SETTINGS_KEY, default_handlers
from ganymede.serve.rooms.manager import RoomManager

__all__ = ["ROOMS_SETTINGS_KEY", "RoomManager", "default_handlers"]
