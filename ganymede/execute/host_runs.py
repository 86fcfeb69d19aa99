"""The headless runner as ``notebooks.run`` needs it: a host ``RunOrder`` in, the outcome out.

The server and ``ganymede execute`` both hand this to the host responder, which cannot import
``execute/`` itself (``execute/`` answers its kernels with the responder).
"""

from __future__ import annotations

from ganymede.execute.model import RunOutcome, RunRequest
from ganymede.execute.runner import run_notebook
from ganymede.host.runs import RunOrder


async def run_for_host(order: RunOrder) -> RunOutcome:
    """Run the ordered notebook on a fresh kernel; cancelling this shuts that kernel down."""
    request = RunRequest(path=order.path, notebook=order.notebook, params=order.params)
    return await run_notebook(request)
