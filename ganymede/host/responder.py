"""The host responder: one method table, each entry checked against the caller's grant.

What a kernel may call is decided here and nowhere else: ``hello`` lists exactly the methods
``call`` would not refuse as unavailable or denied outright, so a cell's ``has(method)`` agrees
with what happens when it calls. Errors leave as HostCallError with the wire's codes: a method
the server lacks (or this kernel can never make) is ``unavailable``, a missing grant ``denied``
naming the grant, anything the call itself gets wrong ``failed`` with the reason.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from ganymede.core import Notebooks
from ganymede.errors import (
    GanymedeError,
    GrantDenied,
    HostCallError,
    PathError,
    SourceMismatch,
)
from ganymede.host.api import PROTOCOL, Caller
from ganymede.host.params import Params
from ganymede.host.reads import Reads
from ganymede.host.runs import RunNotebook, Runs
from ganymede.host.self_edits import SELF_METHODS, CellEditor, SelfEdits, self_call_refusal

if TYPE_CHECKING:
    from ganymede.grant import Grants

READ_METHODS = ("notebooks.list", "notebooks.read", "notebooks.search", "notebooks.results")
OWN_READ_METHODS = ("notebooks.read", "notebooks.results")
"""What a notebook may call on itself whatever its read grant."""
RUN_METHOD = "notebooks.run"
OTHER_METHOD = "other"
"""How ``on_answer`` names a method the server lacks: a kernel cannot make up new names there."""

Handler = Callable[[Caller, Params], Awaitable[Any]]
AnswerListener = Callable[[str, str], None]


@dataclass(frozen=True)
class _Method:
    handler: Handler
    params: tuple[str, ...]


def server_version() -> str:
    try:
        return version("ganymede")
    except PackageNotFoundError:
        return "unknown"


class HostResponder:
    """Answers host calls over the notebooks core; implements ``ganymede.host.api.Responder``.

    ``editor`` is None where no rooms exist (``ganymede execute``): no self.* calls there.
    ``run_notebook`` is None where nothing can start kernels: no notebooks.run then.
    ``on_answer`` hears of every call once answered: the method (``OTHER_METHOD`` for one the
    server lacks) and the outcome, ``ok`` or the error code (the server counts them).
    """

    def __init__(
        self,
        notebooks: Notebooks,
        grants: Grants,
        *,
        editor: CellEditor | None = None,
        run_notebook: RunNotebook | None = None,
        log: logging.Logger | None = None,
        on_answer: AnswerListener | None = None,
    ) -> None:
        self.log = log if log is not None else logging.getLogger(__name__)
        self._on_answer = on_answer
        self._version = server_version()
        self._editor = editor
        self._grants = grants
        self._runs = Runs(notebooks, grants, run_notebook, self) if run_notebook else None
        reads = Reads(notebooks, grants)
        self._methods: dict[str, _Method] = {
            "hello": _Method(self._hello, ()),
            "notebooks.list": _Method(_sync(reads.list), ("dir",)),
            "notebooks.read": _Method(_sync(reads.read), ("path",)),
            "notebooks.search": _Method(
                _sync(reads.search), ("query", "dir", "outputs", "cell_type", "limit")
            ),
            "notebooks.results": _Method(_sync(reads.results), ("path",)),
        }
        if self._runs is not None:
            self._methods[RUN_METHOD] = _Method(
                self._runs.run, ("path", "params", "save", "timeout")
            )
        if editor is not None:
            edits = SelfEdits(editor)
            self._methods["self.add"] = _Method(edits.add, ("cell_type", "source", "after"))
            self._methods["self.edit"] = _Method(edits.edit, ("id", "source", "source_hash"))
            self._methods["self.delete"] = _Method(edits.delete, ("id", "source_hash"))

    async def call(self, caller: Caller, method: str, params: dict[str, Any]) -> Any:
        outcome = "ok"
        try:
            return await self._answer(caller, method, params)
        except HostCallError as error:
            outcome = error.code
            raise
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        except Exception:
            outcome = "failed"
            raise
        finally:
            if self._on_answer is not None:
                self._on_answer(method if method in self._methods else OTHER_METHOD, outcome)

    async def _answer(self, caller: Caller, method: str, params: dict[str, Any]) -> Any:
        entry = self._methods.get(method)
        if entry is None:
            raise HostCallError("unavailable", f"{method}: no such method on this server")
        if caller.depth == 0:
            # a grant set while the kernel runs applies to its next call
            caller = replace(caller, grant=self._grants.for_notebook(caller.notebook))
        if method in SELF_METHODS:
            refusal = self_call_refusal(caller, method)
            if refusal is not None:
                raise refusal
        checked = Params(method, params if params is not None else {}, entry.params)
        try:
            return await entry.handler(caller, checked)
        except HostCallError:
            raise
        except GrantDenied as denied:
            who = caller.notebook or caller.kernel_id
            self.log.info("host: %s from %s denied: it %s", method, who, denied)
            raise HostCallError("denied", f"{method} {denied}") from None
        except PathError as error:
            raise HostCallError("denied", f"{method}: {error}") from None
        except SourceMismatch as mismatch:
            raise HostCallError("failed", f"source_mismatch: {mismatch}") from None
        except GanymedeError as error:
            raise HostCallError("failed", f"{method}: {error}") from None
        except OSError as error:
            raise HostCallError("failed", f"{method}: {error.strerror or error}") from None

    async def release(self, kernel_id: str) -> None:
        if self._runs is not None:
            self._runs.cancel_runs(kernel_id)
        if self._editor is not None:
            await self._editor.release(kernel_id)

    def methods(self, caller: Caller) -> list[str]:
        """The methods ``caller`` may call: those its grant and its kind of kernel allow."""
        allowed = ["hello"]
        if caller.grant.read:
            allowed.extend(READ_METHODS)
        elif caller.notebook is not None:
            allowed.extend(OWN_READ_METHODS)
        if self._runs is not None and self._runs.may_start(caller):
            allowed.append(RUN_METHOD)
        if self._editor is not None and self_call_refusal(caller, "self.*") is None:
            allowed.extend(SELF_METHODS)
        return allowed

    async def _hello(self, caller: Caller, params: Params) -> dict[str, Any]:
        return {
            "protocol": PROTOCOL,
            "server": self._version,
            "notebook": caller.notebook,
            "methods": self.methods(caller),
        }


def _sync(read: Callable[[Caller, Params], Any]) -> Handler:
    """A core read as a handler: the core is synchronous and reads rooms on the event loop."""

    async def handler(caller: Caller, params: Params) -> Any:
        return read(caller, params)

    return handler
