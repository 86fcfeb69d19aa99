"""The small REST services, one module each (``fileid``, ``grants``, ``forks``), and the URL table.

The table joins every service's ``default_handlers``: these (``forks``: jupyter-collaboration's
fork, timeline and undo_redo endpoints), the agent API's, rooms', executions'.
"""

from __future__ import annotations

from ganymede.serve import execution, rooms
from ganymede.serve.agents import handlers as agent
from ganymede.serve.handlers import fileid, forks, grants

default_handlers = [
    *agent.default_handlers,
    *fileid.default_handlers,
    *grants.default_handlers,
    *rooms.default_handlers,
    *forks.default_handlers,
    *execution.default_handlers,
]
