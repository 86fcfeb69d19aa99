"""notebooks.run: another notebook in a fresh kernel, with params, never widening the grant.

The runner is handed in (the server and ``ganymede execute`` wire the headless runner), so this
package does not import ``execute/``. The run's kernel answers host calls as a ``Caller`` one
level deeper, with the called notebook's grant narrowed by the caller's, and no self.* calls.
Each calling kernel has ``RUNS_PER_KERNEL`` runs in flight at most; more wait their turn.
Cancelling the call (the kernel sent cancel, or it ended) cancels the run, and the runner shuts
the run's kernel down; so does a run that outlasts the call's ``timeout`` (error ``timeout``).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ganymede.core import Notebooks, resolve
from ganymede.core.files import atomic_write
from ganymede.errors import HostCallError
from ganymede.host.api import Caller, Responder
from ganymede.host.params import Params
from ganymede.notebook.nbio import dumps_notebook

if TYPE_CHECKING:
    from ganymede.grant import Grants

MAX_DEPTH = 3
RUNS_PER_KERNEL = 2
COPIES_DIR = "runs"


@dataclass(frozen=True)
class RunOrder:
    """One notebook to run for a host call, as the runner needs it."""

    path: Path
    """The notebook's file (its directory is the kernel's working directory)."""
    notebook: dict[str, Any]
    """What to run: the room's notebook when one is open, else the file's."""
    params: dict[str, Any]
    caller_of: Callable[[str], Caller]
    """The Caller the run's kernel answers as, given that kernel's id."""
    responder: Responder | None
    """What answers the run kernel's own host calls (the responder that took this call);
    None: the run's kernel gets no host comm."""


class RunResult(Protocol):
    """What the runner reports (the headless runner's outcome has these fields)."""

    status: str
    notebook: dict[str, Any]
    results: dict[str, Any]
    error: dict[str, Any] | None


RunNotebook = Callable[[RunOrder], Awaitable[RunResult]]


class _Slots:
    """One kernel's run slots, and the calls that are using or waiting for them."""

    def __init__(self) -> None:
        self.semaphore = asyncio.Semaphore(RUNS_PER_KERNEL)
        self.calls: set[asyncio.Task[Any]] = set()


class Runs:
    """The notebooks.run method over one runner."""

    def __init__(
        self,
        notebooks: Notebooks,
        grants: Grants,
        run_notebook: RunNotebook,
        responder: Responder | None = None,
    ) -> None:
        self.notebooks = notebooks
        self.grants = grants
        self.run_notebook = run_notebook
        self.responder = responder
        self._slots: dict[str, _Slots] = {}

    @staticmethod
    def may_start(caller: Caller) -> bool:
        """Whether the caller's grant and depth leave any run open to it (for hello)."""
        return bool(caller.grant.run) and caller.depth < MAX_DEPTH

    async def run(self, caller: Caller, params: Params) -> dict[str, Any]:
        path = params.text("path")
        run_params = params.mapping("params")
        save = params.raw("save")
        if save not in (None, False, "copy"):
            raise params.fail('save must be false or "copy"')
        timeout = params.seconds("timeout")
        if caller.depth >= MAX_DEPTH:
            raise HostCallError(
                "denied", f"notebooks.run: a run {MAX_DEPTH} deep may not start another"
            )
        target = self.grants.check_run(caller.grant, path)
        if save == "copy":
            self.grants.check_read(caller.grant, caller.notebook, target)
        notebook = self.notebooks.read(target)["notebook"]
        grant = self.grants.narrow(caller.grant, self.grants.for_notebook(target))
        run_caller = Caller("", target, grant, depth=caller.depth + 1, self_calls=False)
        order = RunOrder(
            path=resolve(self.notebooks.root, target),
            notebook=notebook,
            params=run_params,
            caller_of=lambda kernel_id: replace(run_caller, kernel_id=kernel_id),
            responder=self.responder,
        )
        outcome = await self._in_slot(caller.kernel_id, order, timeout)
        answer: dict[str, Any] = {
            "status": outcome.status,
            "results": outcome.results,
            "path": target,
        }
        if outcome.error is not None:
            answer["error"] = outcome.error
        if save == "copy":
            answer["copy"] = await asyncio.to_thread(self._save_copy, target, outcome.notebook)
        return answer

    def cancel_runs(self, kernel_id: str) -> None:
        """The calling kernel ended: its runs and the calls waiting for a slot are cancelled."""
        slots = self._slots.pop(kernel_id, None)
        if slots is not None:
            for call in slots.calls:
                call.cancel()

    async def _in_slot(self, kernel_id: str, order: RunOrder, timeout: float | None) -> RunResult:
        """The run, once one of the kernel's slots is free; ``timeout`` bounds the run itself."""
        slots = self._slots.setdefault(kernel_id, _Slots())
        call = asyncio.current_task()
        assert call is not None
        slots.calls.add(call)
        try:
            async with slots.semaphore:
                deadline = asyncio.timeout(timeout)
                try:
                    async with deadline:
                        return await self.run_notebook(order)
                except TimeoutError:
                    if not deadline.expired():
                        raise
                    raise HostCallError(
                        "timeout",
                        f"notebooks.run: the run took longer than {timeout:g} s; "
                        "its kernel was shut down",
                    ) from None
        finally:
            slots.calls.discard(call)
            if not slots.calls and self._slots.get(kernel_id) is slots:
                del self._slots[kernel_id]

    def _save_copy(self, target: str, notebook: dict[str, Any]) -> str:
        """Write the executed notebook under runs/ with a name no other run takes; its API path."""
        stem = target.rpartition("/")[2].removesuffix(".ipynb")
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        name = f"{stem}-{stamp}-{secrets.token_hex(3)}.ipynb"
        directory = resolve(self.notebooks.root, COPIES_DIR)
        directory.mkdir(parents=True, exist_ok=True)
        atomic_write(directory / name, dumps_notebook(notebook).encode("utf-8"))
        return f"{COPIES_DIR}/{name}"
