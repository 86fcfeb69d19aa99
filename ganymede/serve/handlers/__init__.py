"""REST handlers, one module per service, each with a ``default_handlers`` URL table."""

from __future__ import annotations

from ganymede.serve import execution, rooms
from ganymede.serve.agents import handlers as agent
from ganymede.serve.handlers import fileid, grants

default_handlers = [
    *agent.default_handlers,
    *fileid.default_handlers,
    *grants.default_handlers,
    *rooms.default_handlers,
    *execution.default_handlers,
]
