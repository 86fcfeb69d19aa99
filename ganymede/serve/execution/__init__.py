"""Running cells into rooms: the execute endpoint.

``handlers`` is the door; ``requests`` reads its two bodies; ``service`` checks a request and
queues it as a batch; ``batches`` runs each kernel's batches in order over the server's own
connection (``kernel_client``); ``ydoc_outputs`` writes iopub messages into the room's notebook.
"""

from __future__ import annotations

from ganymede.serve.execution.handlers import EXECUTIONS_SETTINGS_KEY, default_handlers
from ganymede.serve.execution.service import Executions

__all__ = ["EXECUTIONS_SETTINGS_KEY", "Executions", "default_handlers"]
