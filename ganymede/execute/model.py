"""What a run is asked to do, what it reports while running, and what it ends with."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ganymede.execute.kernel import Gateway

RunStatus = Literal["ok", "error", "timeout", "dead"]
EventKind = Literal["started", "running", "output", "cell", "finished"]
NotebookSave = Callable[[dict[str, Any]], None]
"""Saves the notebook as it stands mid-run (``Autosave.save``); must not change it."""
HostAttach = Callable[[Any, str], AbstractAsyncContextManager[object]]
"""Answers a run kernel's host calls: given its kernel manager and an id for it, a context
entered once the kernel is up and left before it is killed."""


@dataclass
class RunRequest:
    """One notebook to run headlessly, with everything that shapes the run."""

    path: Path
    """The notebook file: named in messages; its directory is the default working directory."""
    notebook: dict[str, Any]
    """nbformat-4 JSON as parsed; never modified (the outcome carries the executed copy)."""
    params: dict[str, Any] = field(default_factory=dict)
    """JSON data; reaches the kernel as ``GANYMEDE_PARAMS`` and, for Python, the injected cell."""
    kernel_name: str | None = None
    """Overrides the notebook's kernelspec; with neither, python3 runs it (with a warning)."""
    timeout: float | None = None
    """Seconds each cell may run; None for no limit."""
    interrupt_on_timeout: bool = False
    """A cell past ``timeout`` is interrupted and fails with KeyboardInterrupt (the run goes on
    under ``allow_errors`` or ``raises-exception``) instead of ending the run as ``timeout``."""
    startup_timeout: float = 60.0
    cwd: Path | None = None
    """The kernel's working directory; None for the notebook's directory."""
    allow_errors: bool = False
    """Run every cell even after one raises (the run is then ok, with a warning per error)."""
    inject: bool = True
    """Add the papermill-compatible injected-parameters cell (Python kernels only)."""
    host: HostAttach | None = None
    """Gives the kernel a host comm for the span of its cells; None: no host comm."""
    autosave: NotebookSave | None = None
    """Called with the notebook after each executed cell, so a killed run leaves those cells
    written; None: the notebook exists only in the outcome."""
    autosave_every: float | None = None
    """Seconds between saves while one cell runs and prints; None: only after each cell."""
    gateway: Gateway | None = None
    """Run the kernel on this Jupyter kernel gateway; None: a kernel process on this machine.
    A gateway's kernel answers no host calls (``host`` is not attached to it)."""


@dataclass
class RunOutcome:
    """How a run ended, with the executed notebook (outputs up to any failure)."""

    request: RunRequest
    status: RunStatus
    notebook: dict[str, Any]
    results: dict[str, Any]
    error: dict[str, Any] | None
    """``{"cell_index","cell_id","ename","evalue","traceback"}`` when a cell raised;
    ``{"message"}`` otherwise (plus ``cell_index``/``cell_id`` when a cell was running)."""
    duration: float
    warnings: list[str] = field(default_factory=list)
    ran: bool = True
    """False when no kernel came up, so no cell ran: the notebook is not worth writing (a
    rewrite would only clear the file's outputs, or copy stale ones to ``-o``)."""


@dataclass
class RunEvent:
    """Progress of one run, for a progress bar or log lines.

    ``started`` when the notebook begins (its kernel may still be warming); ``running`` as a
    cell is sent to the kernel (``source`` is its code); ``output`` for each
    iopub message a cell's execution sends (``output`` is its type and content, already applied
    to the cell's outputs), as it arrives; ``cell`` after each executed cell. ``cell_index`` is
    the cell's index in ``notebook["cells"]`` of the executed notebook (of ``cell_count``
    cells, the injected cell included). ``finished`` when the outcome is ready, before its
    kernel is cleaned up.
    """

    kind: EventKind
    request: RunRequest
    cell_count: int
    cell_index: int | None = None
    outcome: RunOutcome | None = None
    output: tuple[str, Mapping[str, Any]] | None = None
    source: str | None = None
