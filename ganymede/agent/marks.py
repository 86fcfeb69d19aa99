"""Read marks: each agent's view of each notebook, kept in server memory.

A mark is the notebook as the agent last saw it (a ``CellState`` fingerprint per cell: no
source, so a mark costs kilobytes, not the notebook) under a 16-hex id. The
id names its notebook too, so ``notebook_read(since=id)`` needs no path. Reading makes a new
mark; the agent's own edits and runs move its current mark for the cells they touched only, so
what others did meanwhile is still reported. A few older marks of the same notebook are kept,
so an agent that answers with a slightly older id still gets a report.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from ganymede.agent.changes import CellState

KEPT_MARKS = 8
"""Marks kept per agent and notebook, the current one included."""


@dataclass(frozen=True)
class Mark:
    id: str
    agent: str
    notebook: str
    """The notebook's key (its file id, so a mark follows a rename)."""
    states: tuple[CellState, ...]
    at: float = 0.0
    """When the agent read it, on the clock attribution stamps with."""

    def state_of(self, cell_id: str) -> CellState | None:
        return next((state for state in self.states if state.id == cell_id), None)


def new_mark_id() -> str:
    return secrets.token_hex(8)


class MarkBook:
    """Every agent's read marks in one server process; a restart forgets them."""

    def __init__(
        self,
        new_id: Callable[[], str] = new_mark_id,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._new_id = new_id
        self._clock = clock
        self._by_id: dict[str, Mark] = {}
        self._history: dict[tuple[str, str], list[str]] = {}  # (agent, notebook) → ids, newest last

    def read(self, agent: str, notebook: str, states: Sequence[CellState]) -> Mark:
        """The agent has just seen ``states``: a new current mark. Cells as the current mark
        has them share its fingerprints, so marks of a notebook that changed little cost
        little more than one."""
        current = self.current(agent, notebook)
        seen = {state.id: state for state in current.states} if current is not None else {}
        kept = tuple(
            seen[state.id] if seen.get(state.id) == state else state.fingerprint()
            for state in states
        )
        mark = Mark(self._new_id(), agent, notebook, kept, self._clock())
        ids = self._history.setdefault((agent, notebook), [])
        ids.append(mark.id)
        self._by_id[mark.id] = mark
        while len(ids) > KEPT_MARKS:
            self._by_id.pop(ids.pop(0), None)
        return mark

    def current(self, agent: str, notebook: str) -> Mark | None:
        ids = self._history.get((agent, notebook))
        return self._by_id[ids[-1]] if ids else None

    def get(self, mark_id: str) -> Mark | None:
        return self._by_id.get(mark_id)

    def notebooks(self, agent: str) -> list[str]:
        """The notebooks ``agent`` holds a mark on, in the order it first read them."""
        return [notebook for (owner, notebook) in self._history if owner == agent]

    def seen_cells(self, notebook: str) -> dict[str, CellState] | None:
        """The cells of ``notebook`` as the agents' current marks hold them, by id (a record
        kept of the notebook shares these fingerprints); None when no agent holds a mark."""
        marks = [self.current(agent, key) for agent, key in self._history if key == notebook]
        if not marks:
            return None
        return {state.id: state for mark in marks if mark is not None for state in mark.states}

    def rekey(self, old_notebook: str, new_notebook: str) -> None:
        """A notebook's key changed (its file id was replaced): its marks follow."""
        for agent, notebook in list(self._history):
            if notebook != old_notebook:
                continue
            ids = self._history.pop((agent, notebook))
            self._history[(agent, new_notebook)] = ids
            for mark_id in ids:
                self._by_id[mark_id] = replace(self._by_id[mark_id], notebook=new_notebook)

    def own_change(
        self, agent: str, notebook: str, now: Sequence[CellState], touched: Collection[str]
    ) -> None:
        """The agent changed (or ran) the cells ``touched``; ``now`` is the notebook after it.

        Only those cells move in the current mark, placed after the nearest cell before them
        in ``now`` that the mark holds; every other cell keeps what the agent last saw,
        including others' moves and deletions, which stay news.
        """
        mark = self.current(agent, notebook)
        if mark is None:
            return
        states = [state for state in mark.states if state.id not in touched]
        order = [state.id for state in states]
        for index, state in enumerate(now):
            if state.id not in touched:
                continue
            anchor = next(
                (now[before].id for before in range(index - 1, -1, -1) if now[before].id in order),
                None,
            )
            position = order.index(anchor) + 1 if anchor is not None else 0
            states.insert(position, state.fingerprint())
            order.insert(position, state.id)
        self._by_id[mark.id] = replace(mark, states=tuple(states))


def changed_since(mark: Mark | None, now: CellState) -> bool:
    """Whether the agent would overwrite something it has not seen by editing ``now``'s cell:
    it holds no mark, never saw the cell, or the cell's source or type changed since."""
    if mark is None:
        return True
    seen = mark.state_of(now.id)
    return seen is None or seen.digest != now.digest or seen.cell_type != now.cell_type
