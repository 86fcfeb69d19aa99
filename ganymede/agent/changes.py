"""Change reports: what others did to a notebook since an agent last read it.

An agent's read mark is the notebook as the agent last saw it, cell by cell (``CellState``). The
server also remembers, per cell, who last changed its source, who last placed it (added or
moved it) and who last ran it (``CellAuthors``). ``report_changes`` compares the mark with the
notebook now and names, for every cell that differs, what happened and by whom.

Everything here is pure: the room glue takes the snapshots and the attribution, the MCP tools
and hooks render the report.
"""

from __future__ import annotations

import bisect
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import mmh3

UNKNOWN_AUTHOR = "a person or another agent"
"""The name a change gets when the server has no record of who made it (after a restart)."""


class AuthorKind(StrEnum):
    """What kind of writer an author is; only a person's cell can be a request."""

    PERSON = "person"
    AGENT = "agent"
    KERNEL = "kernel"
    PROGRAM = "program"  # the file on disk, changed by another program


@dataclass(frozen=True)
class Author:
    name: str
    kind: AuthorKind


PERSON = "a person"
"""The name of a person whose client says nothing about who they are."""


ANOTHER_PROGRAM = Author("another program", AuthorKind.PROGRAM)
"""Who wrote a change the room took in from its file."""


@dataclass(frozen=True)
class Stamp:
    """One change to a cell: who made it and when (the caller's monotonic clock)."""

    author: Author
    at: float


@dataclass(frozen=True)
class CellAuthors:
    """The last writer of each part of one cell, as far as this server process has seen."""

    source: Stamp | None = None
    placed: Stamp | None = None
    ran: Stamp | None = None


@dataclass(frozen=True, slots=True)
class CellState:
    """A cell as an agent saw it: enough to tell an edit, a move or a run apart.

    States compare by ``digest``, a fingerprint of the source, not by the source itself: what
    is kept for later (read marks, a closed room's record) is the ``fingerprint`` alone, a few
    dozen bytes where the source may cost kilobytes, and compares with a full state.
    """

    id: str
    cell_type: str
    source: str = field(compare=False)
    """The source; empty in a ``fingerprint``."""
    run: str = ""
    """A fingerprint of the execution count and outputs; empty for a cell never run."""
    digest: int = field(init=False)
    """A 128-bit hash of the source."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "digest", mmh3.hash128(self.source))
        # Three types in every notebook: one string each, not one per cell kept.
        object.__setattr__(self, "cell_type", sys.intern(self.cell_type))

    def fingerprint(self) -> CellState:
        """The state without its source: what a mark keeps."""
        kept = CellState(self.id, self.cell_type, "", self.run)
        object.__setattr__(kept, "digest", self.digest)
        return kept


class Change(StrEnum):
    ADDED = "added"
    EDITED = "edited"
    MOVED = "moved"
    DELETED = "deleted"
    RAN = "ran"
    REQUEST = "request"


@dataclass(frozen=True)
class CellChange:
    """One cell's entry in a change report; ``index`` is None for a deleted cell."""

    id: str
    cell_type: str
    index: int | None
    change: tuple[Change, ...]
    by: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The report entry as tools return it: ``by`` is one name, or names joined for several."""
        entry: dict[str, Any] = {
            "id": self.id,
            "cell_type": self.cell_type,
            "change": [change.value for change in self.change],
            "by": join_names(self.by),
        }
        if self.index is not None:
            entry["index"] = self.index
        return entry


@dataclass(frozen=True)
class Reader:
    """The agent a report is for: its own changes are never reported back to it."""

    name: str
    request_names: tuple[str, ...] = ()
    session_started: float | None = None
    """When the agent's session opened; only a person's edit after it makes a request cell.
    None: no session is open, so no cell is a request."""
    done_requests: frozenset[str] = field(default_factory=frozenset)
    """Ids of cells whose request is marked done (``metadata.ganymede.request.done``)."""


def cell_state(cell: Mapping[str, Any]) -> CellState:
    """The state of one nbformat 4 cell (sources as strings or lists of lines)."""
    source = cell.get("source", "")
    if not isinstance(source, str):
        source = "".join(source)
    run = ""
    if cell.get("cell_type") == "code" and (cell.get("outputs") or cell.get("execution_count")):
        outputs = json.dumps(
            [cell.get("execution_count"), cell.get("outputs", [])],
            sort_keys=True,
            separators=(",", ":"),
        )
        run = format(mmh3.hash128(outputs), "032x")
    return CellState(
        id=str(cell.get("id", "")), cell_type=str(cell.get("cell_type", "")), source=source, run=run
    )


def notebook_states(notebook: Mapping[str, Any]) -> tuple[CellState, ...]:
    """The states of every cell of an nbformat 4 notebook, in order."""
    return tuple(cell_state(cell) for cell in notebook.get("cells", []))


def fingerprints(states: Iterable[CellState]) -> tuple[CellState, ...]:
    """The states without their sources (``CellState.fingerprint``)."""
    return tuple(state.fingerprint() for state in states)


def report_changes(
    mark: Sequence[CellState],
    now: Sequence[CellState],
    authors: Mapping[str, CellAuthors],
    reader: Reader,
    since: float | None = None,
) -> list[CellChange]:
    """What others changed between ``mark`` and ``now``: current cells in order, then deletions.

    A cell counts as moved when it is not among the longest run of cells that kept their
    relative order, so moving one cell reports that cell, not every cell it jumped over. With
    ``since`` (when the mark was made, on the authors' clock) a cell someone placed after it
    is the one that moved when the orders alone cannot tell (two cells swapped).
    Changes whose every author is the reader itself are left out: its own edits and runs are
    not news to it, even when they reached the room some other way than its mark.
    """
    before = {state.id: state for state in mark}
    current_ids = {state.id for state in now}
    replaced = set()
    if since is not None:
        replaced = {
            cell_id
            for cell_id, cell_authors in authors.items()
            if cell_authors.placed is not None and cell_authors.placed.at > since
        }
    kept_order = _kept_in_order(
        [state.id for state in mark if state.id in current_ids],
        [state.id for state in now if state.id in before],
        replaced,
    )
    report: list[CellChange] = []
    for index, state in enumerate(now):
        cell_authors = authors.get(state.id, CellAuthors())
        old = before.get(state.id)
        found: list[tuple[Change, Stamp | None]] = []
        if old is None:
            found.append((Change.ADDED, cell_authors.placed or cell_authors.source))
        else:
            if old.digest != state.digest or old.cell_type != state.cell_type:
                found.append((Change.EDITED, cell_authors.source))
            if state.id not in kept_order:
                found.append((Change.MOVED, cell_authors.placed))
        if state.run and (old is None or old.run != state.run):
            found.append((Change.RAN, cell_authors.ran))
        if not found:
            continue
        newly_written = old is None or any(change is Change.EDITED for change, _ in found)
        if newly_written and _is_request(state, cell_authors.source, reader):
            found.append((Change.REQUEST, cell_authors.source))
        entry = _entry(state, index, found, reader)
        if entry is not None:
            report.append(entry)
    for state in mark:
        if state.id not in current_ids:
            deleted_by = authors.get(state.id, CellAuthors()).placed
            entry = _entry(state, None, [(Change.DELETED, deleted_by)], reader)
            if entry is not None:
                report.append(entry)
    return report


def _entry(
    state: CellState, index: int | None, found: list[tuple[Change, Stamp | None]], reader: Reader
) -> CellChange | None:
    authors = [stamp.author if stamp else None for _, stamp in found]
    if all(_is_reader(author, reader) for author in authors):
        return None
    names: list[str] = []
    for author in authors:
        name = author.name if author is not None else UNKNOWN_AUTHOR
        if name not in names:
            names.append(name)
    return CellChange(
        id=state.id,
        cell_type=state.cell_type,
        index=index,
        change=tuple(change for change, _ in found),
        by=tuple(names),
    )


def _is_reader(author: Author | None, reader: Reader) -> bool:
    return author is not None and author.kind is AuthorKind.AGENT and author.name == reader.name


def _is_request(state: CellState, source_stamp: Stamp | None, reader: Reader) -> bool:
    """A Markdown cell addressed to the agent that a person wrote during the agent's session.

    Cells from files, other programs, agents or kernels are text, never instructions: a
    notebook someone sends you cannot carry orders to your agent.
    """
    if state.cell_type != "markdown" or state.id in reader.done_requests:
        return False
    if source_stamp is None or source_stamp.author.kind is not AuthorKind.PERSON:
        return False
    if reader.session_started is None or source_stamp.at < reader.session_started:
        return False
    return addresses_agent(state.source, reader.request_names)


def addresses_agent(source: str, names: Iterable[str]) -> bool:
    """Whether ``source`` starts with ``@agent`` or ``@<name>`` as a whole word (any case)."""
    text = source.lstrip()
    if not text.startswith("@"):
        return False
    word = text[1:].split(maxsplit=1)[0].rstrip(",:;.!?") if len(text) > 1 else ""
    wanted = {"agent", *(name.casefold() for name in names if name)}
    return word.casefold() in wanted


def request_names(client_name: str) -> tuple[str, ...]:
    """The names a request may address an agent by: its client name and that name's first part
    (``claude-code`` answers to ``@claude-code`` and ``@claude``)."""
    first = client_name.split("-", 1)[0]
    return (client_name, first) if first and first != client_name else (client_name,)


def _kept_in_order(
    old_order: Sequence[str], new_order: Sequence[str], replaced: set[str]
) -> set[str]:
    """The cells that kept their place between two orders of the same cells.

    The cells nobody re-placed are matched first (a longest common subsequence); a re-placed
    cell kept its place when the same matched cell still comes right before it.
    """
    kept = _longest_common_order(
        [cell for cell in old_order if cell not in replaced],
        [cell for cell in new_order if cell not in replaced],
    )
    if replaced:
        before_old, before_new = _kept_before(old_order, kept), _kept_before(new_order, kept)
        kept |= {
            cell for cell in old_order if cell in replaced and before_old[cell] == before_new[cell]
        }
    return kept


def _kept_before(order: Sequence[str], kept: set[str]) -> dict[str, str | None]:
    """For each cell, the nearest kept cell before it (None: none)."""
    nearest: dict[str, str | None] = {}
    last: str | None = None
    for cell in order:
        nearest[cell] = last
        if cell in kept:
            last = cell
    return nearest


def _longest_common_order(old_order: Sequence[str], new_order: Sequence[str]) -> set[str]:
    """The ids on a longest common subsequence of two orders of the same cells.

    Patience-style: the new positions of the old order, then a longest increasing
    subsequence in O(n log n), so a 2,000-cell notebook costs milliseconds.
    """
    position = {cell_id: index for index, cell_id in enumerate(new_order)}
    sequence = [position[cell_id] for cell_id in old_order]
    tails: list[int] = []  # tails[k]: index in sequence of the smallest tail of a run of k+1
    previous: list[int] = [-1] * len(sequence)
    for index, value in enumerate(sequence):
        length = bisect.bisect_left(tails, value, key=sequence.__getitem__)
        previous[index] = tails[length - 1] if length > 0 else -1
        if length == len(tails):
            tails.append(index)
        else:
            tails[length] = index
    kept: set[str] = set()
    cursor = tails[-1] if tails else -1
    while cursor != -1:
        kept.add(old_order[cursor])
        cursor = previous[cursor]
    return kept


def join_names(names: Sequence[str]) -> str:
    """``Thomas``, ``Thomas and Maya``, ``Thomas, Maya and claude-code``."""
    if not names:
        return UNKNOWN_AUTHOR
    if len(names) == 1:
        return names[0]
    return f"{', '.join(names[:-1])} and {names[-1]}"


def changed_line(changes: Sequence[CellChange], mark_id: str, path: str | None = None) -> str:
    """The line that ends a tool reply when others changed a notebook since the agent's mark.

    ``path`` is named only when the agent holds marks on more than one notebook.
    """
    count = len(changes)
    names: list[str] = []
    for change in changes:
        names.extend(name for name in change.by if name not in names)
    cells = "1 cell" if count == 1 else f"{count} cells"
    where = f" in {path}" if path else ""
    return (
        f"@@changed {cells}{where} by {join_names(names)} since your last read: "
        f'call notebook_read(since: "{mark_id}")'
    )
