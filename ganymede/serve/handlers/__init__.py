"""REST handlers, one module per service, each with a ``default_handlers`` URL table."""

from __future__ import annotations

from ganymede.serve import execution, rooms
from ganymede.serve.handlers import agent, fileid, grants

default_handlers = [
    *agent.default_handlers,
    *fileid.default_handlers,
    *grants.default_handlers,
    *rooms.default_handlers,
    *execution.default_handlers,
]
