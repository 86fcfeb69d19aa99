"""The headless runner as ``notebooks.run`` needs it: a host ``RunOrder`` in, the outcome out.

The server and ``ganymede execute`` both hand this to the host responder, which cannot import
``execute/`` itself (``execute/`` answers its kernels with the responder). The run's kernel gets
a host comm of its own, answered by the same responder as the kernel one level deeper.
"""

from __future__ import annotations

import logging
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from ganymede.core import Notebooks, to_api_path
from ganymede.errors import PathError
from ganymede.execute.model import HostAttach, RunOutcome, RunRequest
from ganymede.execute.runner import run_notebook
from ganymede.fileid import FileIdStore
from ganymede.grant import Grant, Grants, GrantStore
from ganymede.host.api import Caller
from ganymede.host.driver import attached
from ganymede.host.responder import HostResponder
from ganymede.host.runs import RunOrder

LOG = logging.getLogger(__name__)


async def run_for_host(order: RunOrder) -> RunOutcome:
    """Run the ordered notebook on a fresh kernel; cancelling this shuts that kernel down."""

    responder = order.responder

    def host(manager: Any, kernel_id: str) -> AbstractAsyncContextManager[object]:
        assert responder is not None
        return attached(manager, responder, order.caller_of(kernel_id), LOG)

    request = RunRequest(
        path=order.path,
        notebook=order.notebook,
        params=order.params,
        host=host if responder is not None else None,
    )
    return await run_notebook(request)


class ExecuteHost:
    """The host API of ``ganymede execute``: its kernels' calls answered under ``defaults``
    (``[host]`` with ``--grant`` keys in their place) and each notebook's own grant over them,
    with no self.* calls, since the run writes the notebook itself when it ends."""

    def __init__(self, root: Path, defaults: Grant) -> None:
        self.root = root.resolve()
        self.file_ids = FileIdStore(self.root)
        self.grants = Grants(self.root, defaults, GrantStore(), self.file_ids)
        self.responder = HostResponder(Notebooks(self.root), self.grants, run_notebook=run_for_host)

    def attach_for(self, path: Path) -> HostAttach:
        """What answers the kernel running the notebook at ``path`` (its grant, if under root)."""
        try:
            api_path: str | None = to_api_path(self.root, path)
        except PathError:
            api_path = None  # a notebook outside the root: the defaults, and no path of its own

        def host(manager: Any, kernel_id: str) -> AbstractAsyncContextManager[object]:
            grant = self.grants.for_notebook(api_path)
            caller = Caller(kernel_id, api_path, grant, self_calls=False)
            return attached(manager, self.responder, caller, LOG)

        return host

    def close(self) -> None:
        self.file_ids.close()
