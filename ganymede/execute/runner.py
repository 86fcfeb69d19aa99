"""Running notebooks headlessly: one fresh kernel per notebook, the next one already warming.

Kernel start-up is most of a short run, so ``run_notebooks`` starts the kernel for the next
request while up to ``jobs`` notebooks run, and kills each kernel in the background once its
outcome is ready; it returns only when every kernel it started is gone. Kernels are never
reused: state left by one notebook must not leak into the next.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from jupyter_client.kernelspec import KernelSpec, NoSuchKernel

from ganymede.errors import KernelDied, RunTimeout, UsageError
from ganymede.execute.kernel import (
    IopubHandler,
    KernelLaunch,
    RunKernel,
    resolved_kernel_name,
)
from ganymede.execute.kernel_start import start_kernel
from ganymede.execute.kernelspecs import KernelSpecs
from ganymede.execute.model import RunEvent, RunOutcome, RunRequest, RunStatus
from ganymede.execute.outputs import CellOutputs, DisplayRegistry
from ganymede.execute.parameters import has_tag, inject_parameters, papermill_metadata
from ganymede.execute.parameters_cell import parameter_warnings
from ganymede.execute.replies import clean_stop
from ganymede.execute.widgets import WidgetStates, deliver, with_widget_state
from ganymede.kernel import PARAMS_VARIABLE
from ganymede.notebook.provenance import run_stamp
from ganymede.notebook.results import read_results

DEFAULT_KERNEL = "python3"
RAISES_EXCEPTION_TAG = "raises-exception"
"""nbclient's tag for a cell that is expected to raise: the run goes on."""
SKIP_EXECUTION_TAG = "skip-execution"
"""nbclient's tag for a cell a headless run leaves alone."""

EventHandler = Callable[[RunEvent], None]


@dataclass
class _Plan:
    """A request made ready to run: the notebook to execute and the kernel to run it on."""

    request: RunRequest
    notebook: dict[str, Any]
    kernel_name: str
    launch: KernelLaunch | None
    """None when the kernel cannot be started at all (``failure`` says why)."""
    failure: str | None = None
    warnings: list[str] = field(default_factory=list)


async def run_notebook(request: RunRequest, on_event: EventHandler | None = None) -> RunOutcome:
    """Run one notebook; see ``run_notebooks``."""
    [outcome] = await run_notebooks([request], jobs=1, on_event=on_event)
    return outcome


async def run_notebooks(
    requests: list[RunRequest], jobs: int = 1, on_event: EventHandler | None = None
) -> list[RunOutcome]:
    """Run notebooks, at most ``jobs`` at once; their outcomes in request order.

    A notebook's failure is its outcome's status, never an exception; UsageError (raised before
    any kernel starts) means a request itself is malformed, such as a parameter that is not JSON.
    """
    if jobs < 1:
        raise UsageError(f"jobs must be at least 1, got {jobs}")
    specs = KernelSpecs()
    plans = [_plan(request, specs) for request in requests]
    emit = on_event or (lambda event: None)
    warming = asyncio.Semaphore(jobs + 1)
    running = asyncio.Semaphore(jobs)
    cleanups: list[asyncio.Task[None]] = []

    async def run_planned(plan: _Plan) -> RunOutcome:
        if plan.launch is None:
            return _unstartable(plan, emit)
        async with warming:
            starting = asyncio.ensure_future(
                start_kernel(plan.launch, plan.request.startup_timeout)
            )
            try:
                async with running:
                    return await _execute(plan, starting, emit)
            finally:
                cleanups.append(asyncio.ensure_future(_dispose(starting)))

    runs = [asyncio.ensure_future(run_planned(plan)) for plan in plans]
    try:
        return list(await asyncio.gather(*runs))
    finally:
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        await asyncio.shield(asyncio.gather(*cleanups, return_exceptions=True))


class NotebookQueue:
    """Runs notebooks one at a time as a caller hands them over, the next ones' kernels warming.

    For a caller that is given one notebook at a time but knows which come next, as a pytest
    session runs one item, reports it, then runs the next: ``run(request, then=following)``
    starts the kernels of ``following`` while ``request`` runs, as ``run_notebooks`` does down a
    list, and kills each finished kernel in the background. A kernel warmed for a request that
    is no longer in ``then`` is killed. The queue lives on one event loop; ``aclose`` on that
    loop kills every kernel still warming or being killed.
    """

    def __init__(self) -> None:
        self._specs = KernelSpecs()
        self._warm: dict[int, tuple[RunRequest, _Plan, asyncio.Future[RunKernel] | None]] = {}
        self._cleanups: list[asyncio.Future[None]] = []

    async def run(
        self,
        request: RunRequest,
        *,
        then: Sequence[RunRequest] = (),
        on_event: EventHandler | None = None,
    ) -> RunOutcome:
        """Run ``request``, on the kernel warmed for it if an earlier call named it in ``then``."""
        emit = on_event or (lambda event: None)
        plan, starting = self._take(request)
        self._warm_up(then)
        if starting is None:
            return _unstartable(plan, emit)
        try:
            return await _execute(plan, starting, emit)
        finally:
            self._dispose_later(starting)

    async def aclose(self) -> None:
        """Kill the kernels warming for notebooks that will not run; wait for every kill."""
        self._warm_up(())
        await asyncio.shield(asyncio.gather(*self._cleanups, return_exceptions=True))
        self._cleanups = []

    def _take(self, request: RunRequest) -> tuple[_Plan, asyncio.Future[RunKernel] | None]:
        warm = self._warm.pop(id(request), None)
        if warm is not None:
            if warm[0] is request:
                return warm[1], warm[2]
            self._dispose_later(warm[2])  # warmed for a request gone since, its id reused
        plan = _plan(request, self._specs)
        return plan, _start(plan)

    def _warm_up(self, requests: Sequence[RunRequest]) -> None:
        """Warm a kernel for each of ``requests``; kill those warmed for any other."""
        wanted = {id(request): request for request in requests}
        for key in [key for key, warm in self._warm.items() if wanted.get(key) is not warm[0]]:
            self._dispose_later(self._warm.pop(key)[2])
        for key, request in wanted.items():
            if key in self._warm:
                continue
            try:
                plan = _plan(request, self._specs)
            except UsageError:
                continue  # its own run reports it
            self._warm[key] = (request, plan, _start(plan))

    def _dispose_later(self, starting: asyncio.Future[RunKernel] | None) -> None:
        self._cleanups = [cleanup for cleanup in self._cleanups if not cleanup.done()]
        if starting is not None:
            self._cleanups.append(asyncio.ensure_future(_dispose(starting)))


def _start(plan: _Plan) -> asyncio.Future[RunKernel] | None:
    """The plan's kernel, starting; None when it cannot start (the plan's ``failure``)."""
    if plan.launch is None:
        return None
    return asyncio.ensure_future(start_kernel(plan.launch, plan.request.startup_timeout))


def prepare_notebooks(requests: list[RunRequest]) -> list[RunOutcome]:
    """Each notebook as its run would start, run on no kernel: parameters injected, outputs of
    an earlier run cleared (papermill's ``--prepare-only``).

    Status ``ok`` with ``ran`` False; ``dead`` when the kernel is unknown, since which kernel
    runs the notebook decides whether parameters are injected.
    """
    specs = KernelSpecs()
    outcomes = []
    for request in requests:
        plan = _plan(request, specs)
        status: RunStatus = "ok" if plan.launch is not None else "dead"
        error = None if plan.failure is None else {"message": plan.failure}
        outcomes.append(
            RunOutcome(
                request=request,
                status=status,
                notebook=plan.notebook,
                results={},
                error=error,
                duration=0.0,
                warnings=plan.warnings,
                ran=False,
            )
        )
    return outcomes


async def _dispose(starting: asyncio.Future[RunKernel]) -> None:
    """Kill the kernel of a finished run; a start still under way is cancelled (it cleans up)."""
    starting.cancel()
    try:
        kernel = await starting
    except (asyncio.CancelledError, KernelDied):
        return  # never started, or already reported in the run's outcome
    await kernel.kill()


def _plan(request: RunRequest, specs: KernelSpecs) -> _Plan:
    notebook = copy.deepcopy(dict(request.notebook))
    metadata = notebook.setdefault("metadata", {})
    warnings: list[str] = []
    kernel_name = request.kernel_name or (metadata.get("kernelspec") or {}).get("name")
    if not kernel_name:
        kernel_name = DEFAULT_KERNEL
        warnings.append(f"no kernelspec in {request.path}: running on {DEFAULT_KERNEL}")
    kernel_name = resolved_kernel_name(kernel_name)
    params_json = _params_json(request.params)
    if request.gateway is not None:
        spec = _gateway_spec(kernel_name, metadata)  # the gateway says at start if it has it
    else:
        try:
            spec = specs.get_kernel_spec(kernel_name)
        except NoSuchKernel:
            available = ", ".join(sorted(specs.find_kernel_specs())) or "none"
            failure = f"no such kernel: {kernel_name} (available: {available})"
            return _Plan(request, notebook, kernel_name, None, failure, warnings)
    if request.inject and (spec.language or "").lower().startswith("python"):
        for warning in parameter_warnings(notebook, request.params):
            warnings.append(f"{request.path}: {warning}")
        notebook = inject_parameters(notebook, request.params)
    notebook["metadata"] = metadata = papermill_metadata(notebook["metadata"], request.params)
    if not metadata.get("kernelspec"):
        metadata["kernelspec"] = {
            "name": kernel_name,
            "display_name": spec.display_name,
            "language": spec.language,
        }
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    launch = KernelLaunch(
        kernel_name=kernel_name,
        cwd=(request.cwd or request.path.parent).resolve(),
        env={PARAMS_VARIABLE: params_json, "JPY_SESSION_NAME": str(request.path.resolve())},
        gateway=request.gateway,
    )
    return _Plan(request, notebook, kernel_name, launch, None, warnings)


def _gateway_spec(kernel_name: str, metadata: dict[str, Any]) -> KernelSpec:
    """The kernel as the notebook describes it: a gateway's kernels are not installed here."""
    kernelspec = metadata.get("kernelspec") or {}
    language = (metadata.get("language_info") or {}).get("name") or kernelspec.get("language")
    if not language and kernel_name.startswith("python"):
        language = "python"
    return KernelSpec(
        display_name=kernelspec.get("display_name") or kernel_name, language=language or ""
    )


def _params_json(params: dict[str, Any]) -> str:
    try:
        return json.dumps(params, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise UsageError(f"parameters must be JSON data: {error}") from None


def _unstartable(plan: _Plan, emit: EventHandler) -> RunOutcome:
    cell_count = len(plan.notebook.get("cells", []))
    emit(RunEvent("started", plan.request, cell_count))
    now = _utc_now()
    error = {"message": plan.failure}
    outcome = _outcome(plan, "dead", error, started=now, ended=now, duration=0.0, ran=False)
    emit(RunEvent("finished", plan.request, cell_count, outcome=outcome))
    return outcome


async def _execute(
    plan: _Plan, starting: asyncio.Future[RunKernel], emit: EventHandler
) -> RunOutcome:
    """Run the plan's cells in order on its kernel, stopping at the first failure."""
    request, notebook = plan.request, plan.notebook
    cells: list[dict[str, Any]] = notebook.get("cells", [])
    started, clock = _utc_now(), time.perf_counter()
    emit(RunEvent("started", request, len(cells)))
    status: RunStatus = "ok"
    error: dict[str, Any] | None = None
    ran = True
    try:
        kernel = await starting
    except KernelDied as died:
        status, error, ran = "dead", {"message": str(died)}, False
    else:
        if "language_info" in kernel.info:
            notebook["metadata"]["language_info"] = kernel.info["language_info"]
        widgets = WidgetStates(DisplayRegistry())
        async with _hosted(request, kernel):
            status, error = await _execute_cells(plan, kernel, widgets, emit)
        notebook["metadata"] = with_widget_state(notebook["metadata"], widgets.metadata())
    duration = time.perf_counter() - clock
    outcome = _outcome(
        plan, status, error, started=started, ended=_utc_now(), duration=duration, ran=ran
    )
    emit(RunEvent("finished", request, len(cells), outcome=outcome))
    return outcome


def _hosted(request: RunRequest, kernel: RunKernel) -> AbstractAsyncContextManager[object]:
    """The request's host comm on the kernel while its cells run, if it asked for one."""
    if request.host is None or kernel.manager is None:
        return nullcontext()  # a gateway's kernel: no local channel to answer it on
    return request.host(kernel.manager, uuid.uuid4().hex)


async def _execute_cells(
    plan: _Plan, kernel: RunKernel, widgets: WidgetStates, emit: EventHandler
) -> tuple[RunStatus, dict[str, Any] | None]:
    request = plan.request
    cells: list[dict[str, Any]] = plan.notebook.get("cells", [])
    displays = widgets.displays
    for index, cell in enumerate(cells):
        source = _source(cell)
        if (
            cell.get("cell_type") != "code"
            or not source.strip()
            or has_tag(cell, SKIP_EXECUTION_TAG)
        ):
            continue
        may_raise = request.allow_errors or has_tag(cell, RAISES_EXCEPTION_TAG)
        where = {"cell_index": index, "cell_id": cell.get("id")}
        collector = CellOutputs(cell["outputs"], displays)
        on_iopub = partial(deliver, widgets=widgets, cell=collector)
        emit(RunEvent("running", request, len(cells), cell_index=index, source=source))
        try:
            executed = await kernel.execute(
                source,
                _iopub_handler(plan, collector, on_iopub, index, emit),
                timeout=request.timeout,
                stop_on_error=not may_raise,
                interrupt_on_timeout=request.interrupt_on_timeout,
            )
        except RunTimeout as timed_out:
            await kernel.interrupt()
            return "timeout", {**where, "message": f"{_cell_name(index, cell)} {timed_out}"}
        except KernelDied as died:
            return "dead", {**where, "message": f"{died} while running {_cell_name(index, cell)}"}
        finally:
            collector.finish()
            cell["execution_count"] = collector.execution_count
        for comm_id, outputs in widgets.synced_outputs():
            kernel.send_comm(comm_id, {"method": "update", "state": {"outputs": outputs}})
        cell.setdefault("metadata", {})["execution"] = executed.timings
        reply = executed.reply
        if executed.interrupted:
            timed_out = f"{_cell_name(index, cell)} ran longer than {request.timeout:g} s"
            if not may_raise:
                return "timeout", {**where, "message": f"{timed_out}: interrupted"}
            plan.warnings.append(f"{request.path}: {timed_out}: interrupted; the run goes on")
        if not executed.outputs_complete:
            plan.warnings.append(
                f"{request.path}: the last outputs of {_cell_name(index, cell)} did not arrive "
                "(the kernel sent them faster than they could be read); they may be incomplete"
            )
        if reply.get("execution_count") is not None:
            cell["execution_count"] = reply["execution_count"]
        if request.autosave is not None:
            request.autosave(plan.notebook)
        emit(RunEvent("cell", request, len(cells), cell_index=index))
        stop = clean_stop(reply)
        if stop is not None:
            plan.warnings.append(
                f"{request.path}: {_cell_name(index, cell)} stopped the run with {stop}; "
                "later cells were not run"
            )
            return "ok", None
        if reply.get("status") == "error":
            failure = {
                **where,
                "ename": reply.get("ename", ""),
                "evalue": reply.get("evalue", ""),
                "traceback": list(reply.get("traceback", [])),
            }
            if not may_raise:
                return "error", failure
            if request.allow_errors and not executed.interrupted:
                plan.warnings.append(
                    f"{request.path}: {_cell_name(index, cell)} raised "
                    f"{failure['ename']}: {failure['evalue']} (errors allowed)"
                )
    return "ok", None


def _iopub_handler(
    plan: _Plan, collector: CellOutputs, on_iopub: IopubHandler, index: int, emit: EventHandler
) -> IopubHandler:
    """``on_iopub``, then an ``output`` event; also saves the notebook when a long cell has
    printed for ``autosave_every`` seconds since the last save (a silent cell has nothing new
    to save)."""
    request = plan.request
    cell_count = len(plan.notebook.get("cells", []))
    save, every = request.autosave, request.autosave_every
    last_save = time.monotonic()

    def handle(message: Mapping[str, Any]) -> None:
        nonlocal last_save
        on_iopub(message)
        msg_type, content = message["msg_type"], message.get("content", {})
        emit(RunEvent("output", request, cell_count, cell_index=index, output=(msg_type, content)))
        if save is not None and every:
            now = time.monotonic()
            if now - last_save >= every:
                collector.settle()
                save(plan.notebook)
                last_save = now

    return handle


def _outcome(
    plan: _Plan,
    status: RunStatus,
    error: dict[str, Any] | None,
    *,
    started: str,
    ended: str,
    duration: float,
    ran: bool = True,
) -> RunOutcome:
    notebook = plan.notebook
    notebook["metadata"] = run_stamp(
        notebook.get("metadata", {}),
        params=plan.request.params,
        started=started,
        ended=ended,
        duration=round(duration, 3),
        status=status,
        kernel=plan.kernel_name,
        error=_stamped_error(error),
    )
    return RunOutcome(
        request=plan.request,
        status=status,
        notebook=notebook,
        results=read_results(notebook.get("cells", [])),
        error=error,
        duration=duration,
        warnings=plan.warnings,
        ran=ran,
    )


def _stamped_error(error: dict[str, Any] | None) -> dict[str, Any] | None:
    """The error as the notebook records it: the traceback is already in the failing cell."""
    if error is None:
        return None
    return {key: value for key, value in error.items() if key != "traceback"}


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _cell_name(index: int, cell: dict[str, Any]) -> str:
    cell_id = cell.get("id")
    return f"cell {index}" + (f" (id {cell_id})" if cell_id else "")


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
