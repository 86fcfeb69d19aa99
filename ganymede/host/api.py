"""The interface between the host comm driver and the responder.

The driver owns the comm on the kernel's subshell; the responder owns the methods and the grant
checks. The driver learns who a kernel is (its ``Caller``) from a callable it is handed when it is
attached, so it never asks the server or the runner how grants are kept.

Wire format, on the ``ganymede.host.v1`` comm (comm ``data``):

- kernel → server, ``comm_msg`` on iopub: ``{"id": str, "method": str, "params": {...}}`` for a
  call, ``{"id": str, "cancel": true}`` to abandon one.
- server → kernel, ``comm_msg`` on shell, on the host subshell: ``{"id": str, "result": ...}`` or
  ``{"id": str, "error": {"code": str, "message": str}}``, ``code`` one of ``ERROR_CODES``.
- the server's ``comm_open`` carries ``{"hello": <hello result>}``; a comm the kernel opens to the
  target is answered with a ``comm_msg`` carrying ``{"hello": <hello result>}``; a second open
  while one is held is closed with ``{"error": "taken"}``.

The open handshake: after the kernel's first ``kernel_info_reply`` lists ``"kernel subshells"``,
the server sends ``create_subshell_request`` on control, then offers the comm (``comm_open`` on
shell, on that subshell) and waits for the kernel's idle status for it. A kernel with no client
loaded yet refuses the offer (``comm_close``); its client, once a cell calls ``host()``,
registers the target and opens the comm itself (``comm_open`` on iopub, data
``{"protocol": 1}``), and waits for the ``hello`` message. Either way one comm is held per
kernel until the kernel closes it, the server stops (it answers calls in flight
``disconnected`` and closes the comm) or the kernel restarts (the server starts over).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ganymede.errors import HostCallError

if TYPE_CHECKING:
    from ganymede.grant import Grant

__all__ = ["ERROR_CODES", "PROTOCOL", "TARGET", "Caller", "HostCallError", "Responder"]

PROTOCOL = 1
TARGET = "ganymede.host.v1"
ERROR_CODES = ("unavailable", "denied", "cancelled", "timeout", "failed", "disconnected")


@dataclass(frozen=True)
class Caller:
    """Who is calling: fixed when the kernel is attached (a served notebook's session, a run)."""

    kernel_id: str
    notebook: str | None
    """API path of the kernel's notebook; None for a kernel started for no notebook."""
    grant: Grant
    """Effective grant: already intersected with every grant up a run chain. At depth 0 the
    responder reads the notebook's grant again at every call, so a grant set while the kernel
    runs applies to its next call."""
    depth: int = 0
    """0 for served and executed kernels, one more per ``notebooks.run`` in the chain."""
    self_calls: bool = True
    """False for ``ganymede execute`` and run kernels, which write their notebook themselves."""


class Responder(Protocol):
    async def call(self, caller: Caller, method: str, params: dict[str, Any]) -> Any:
        """The JSON result; raises HostCallError; asyncio cancellation = the kernel sent cancel."""

    async def release(self, kernel_id: str) -> None:
        """The kernel ended (shut down, died or restarted): let go of what its calls hold.

        The driver calls it once per attached kernel when that kernel's comm is gone; rooms
        held open by ``self.*`` calls close and runs still in flight are cancelled.
        """
