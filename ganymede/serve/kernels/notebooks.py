"""A notebook's kernel, as the agent tools need it: found through its session, or started.

An agent asking to run cells of a notebook nobody has open gets what JupyterLab would do: a
session for the notebook, on the kernel its metadata names (else the server's default), so a
person opening it later joins the same kernel and sees the same variables.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from jupyter_client.kernelspec import NoSuchKernel

from ganymede.errors import UsageError


class NotebookKernels:
    def __init__(self, session_manager: Any, kernel_manager: Any) -> None:
        self.session_manager = session_manager
        self.kernel_manager = kernel_manager

    async def running(self, path: str) -> str | None:
        """The id of the kernel of ``path``'s session, if it has one."""
        for session in await self.session_manager.list_sessions():
            kernel = session.get("kernel") or {}
            if session.get("path") == path and kernel.get("id"):
                return str(kernel["id"])
        return None

    async def ensure(self, path: str, notebook: Mapping[str, Any]) -> str:
        """The kernel of ``path``'s session, starting a session when there is none."""
        running = await self.running(path)
        if running is not None:
            return running
        spec = (notebook.get("metadata") or {}).get("kernelspec") or {}
        name = spec.get("name") or self.kernel_manager.default_kernel_name
        try:
            model = await self.session_manager.create_session(
                path=path, name=PurePosixPath(path).name, type="notebook", kernel_name=name
            )
        except NoSuchKernel:
            raise UsageError(
                f"{path} asks for kernel {name!r}, which this server has not"
            ) from None
        return str(model["kernel"]["id"])

    async def restart(self, path: str) -> None:
        await self.kernel_manager.restart_kernel(await self._running(path))

    async def interrupt(self, path: str) -> None:
        await self.kernel_manager.interrupt_kernel(await self._running(path))

    async def _running(self, path: str) -> str:
        kernel_id = await self.running(path)
        if kernel_id is None:
            raise UsageError(f"{path} has no kernel running: run a cell to start one")
        return kernel_id
