"""Provenance metadata: who wrote a cell, how a notebook was last run, which requests are done.

Every helper takes a ``metadata`` dict (a cell's or the notebook's) and returns a NEW dict with
the ``ganymede`` key updated; the input is never mutated, so a caller can compare before and
after or hand the result to a room transaction in one piece. Other keys of ``metadata`` and of
``metadata.ganymede`` are kept as they are. Times are ISO 8601 UTC strings the caller passes in:
reading the clock is the caller's business, which keeps these functions pure and testable.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

NAMESPACE = "ganymede"
KERNEL_AUTHOR = "kernel"
"""The ``by`` of cells a kernel writes through the host API's ``self.*`` calls."""
HISTORY_LIMIT = 20


def _with_section(metadata: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A deep copy of ``metadata`` and its ``ganymede`` section (created, or replaced if not a
    mapping: a hand-edited file may hold anything there, and provenance must still be written)."""
    updated = copy.deepcopy(dict(metadata))
    section = updated.get(NAMESPACE)
    section = dict(section) if isinstance(section, Mapping) else {}
    updated[NAMESPACE] = section
    return updated, section


def run_stamp(
    metadata: Mapping[str, Any],
    *,
    params: Mapping[str, Any],
    started: str,
    ended: str,
    duration: float,
    status: str,
    kernel: str,
    error: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """Notebook metadata recording the headless run that produced the file's outputs.

    Sets ``metadata.ganymede.run`` (replacing a previous run's record, since the outputs it
    described are gone too). ``error`` is written only when the run failed, so a clean run's
    record has no null field to misread.
    """
    updated, section = _with_section(metadata)
    run: dict[str, Any] = {
        "params": copy.deepcopy(dict(params)),
        "started": started,
        "ended": ended,
        "duration": duration,
        "status": status,
        "kernel": kernel,
    }
    if error is not None:
        run["error"] = copy.deepcopy(dict(error))
    section["run"] = run
    return updated


def agent_stamp(
    metadata: Mapping[str, Any],
    *,
    by: str,
    mode: str,
    at: str,
    replaced_source: str | None = None,
) -> dict[str, Any]:
    """Cell metadata naming who last wrote the cell: ``metadata.ganymede.agent = {by, mode, at}``.

    ``by`` is an agent's client name, or ``KERNEL_AUTHOR`` for a kernel's ``self.*`` calls (one
    stamp for both, so readers look in one place). ``mode`` says how: ``"add"`` or ``"edit"``.

    When an edit replaces a source, ``replaced_source`` is appended to
    ``metadata.ganymede.agent.history`` as ``{at, by, source}`` — when it was replaced and by whom
    — so a person can see and restore what an agent overwrote. The history keeps the newest
    ``HISTORY_LIMIT`` entries: it is saved in the notebook file and sent to every room client on
    each change, so it must not grow with every edit of a cell an agent rewrites in a loop.
    """
    updated, section = _with_section(metadata)
    previous = section.get("agent")
    history = previous.get("history") if isinstance(previous, Mapping) else None
    history = list(history) if isinstance(history, list) else []
    if replaced_source is not None:
        history.append({"at": at, "by": by, "source": replaced_source})
    agent: dict[str, Any] = {"by": by, "mode": mode, "at": at}
    if history:
        agent["history"] = history[-HISTORY_LIMIT:]
    section["agent"] = agent
    return updated


def request_done_stamp(metadata: Mapping[str, Any], at: str) -> dict[str, Any]:
    """Cell metadata marking a request cell answered, so no agent is asked it twice."""
    updated, section = _with_section(metadata)
    section["request"] = {"done": at}
    return updated
