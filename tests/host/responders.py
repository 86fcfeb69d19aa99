"""A small responder with methods that echo, fail, and wait until cancelled: it drives the comm
from a real kernel without the server's method table."""

from __future__ import annotations

import asyncio
from typing import Any

from ganymede.errors import HostCallError
from ganymede.host.api import PROTOCOL, Caller

METHODS = ["hello", "echo", "fail", "wait"]
DENIED = "notebooks.run needs a run grant covering journal/x.ipynb"


class EchoResponder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.waiting = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.released: list[str] = []

    async def call(self, caller: Caller, method: str, params: dict[str, Any]) -> Any:
        self.calls.append((method, params))
        if method == "hello":
            notebook = caller.notebook
            return {
                "protocol": PROTOCOL,
                "server": "test",
                "notebook": notebook,
                "methods": METHODS,
            }
        if method == "echo":
            return {"params": params, "kernel": caller.kernel_id}
        if method == "fail":
            raise HostCallError(
                "denied", "notebooks.run needs a run grant covering journal/x.ipynb"
            )
        if method == "wait":
            self.waiting.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
        raise HostCallError("unavailable", f"no method {method}")

    async def release(self, kernel_id: str) -> None:
        self.released.append(kernel_id)
