"""The agent core inside the server: sessions, read marks, edit checks and change reports.

Agents reach it over ``/api/agent/…`` (``ganymede mcp`` is one). Everything goes through the
notebooks' rooms, so an agent sees a person's unsaved typing, its edits reach every client at
once, and the rooms' attribution tells it who changed what. Marks and sessions live in server
memory: a restart forgets them, and reports then say "a person or another agent".

A session is one agent process at work. It holds the rooms it reads, edits and runs in open
while it works: until ``presence_idle`` seconds after its last call, when its presence leaves
them anyway. Then the rooms close as any clientless room does (after their grace period, having
saved), and what the agent needs of them is kept without them: its marks, and each closed
room's attribution and cell fingerprints (``kept``); its next call opens the room again. Only
while a session of that agent is open can a person's ``@agent`` cell be a request. A session
the server has not heard from in ``SESSION_TIMEOUT`` seconds is over: its process is gone.

``Agents`` holds the reads, edits and runs; the sessions and their presence in the rooms are
``sessions``, the changes made as suggestions in forks ``suggestion_forks``, and the watchers
``ganymede mcp watch`` polls ``watch``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from jupyter_client.kernelspec import NoSuchKernel
from jupyter_ydoc import YNotebook

from ganymede.agent import (
    UNKNOWN_AUTHOR,
    Author,
    AuthorKind,
    CellAuthors,
    Mark,
    MarkBook,
    Reader,
    changed_line,
    changed_since,
    notebook_states,
    report_changes,
    request_names,
)
from ganymede.core import Notebooks, normalize_api_path
from ganymede.core.files import atomic_write
from ganymede.core.paths import resolve
from ganymede.errors import (
    EditRefused,
    GanymedeError,
    NotebookNotFound,
    UnknownMark,
    UsageError,
)
from ganymede.fileid import FileIdStore
from ganymede.grant import Grant
from ganymede.host.api import Caller
from ganymede.host.params import Params
from ganymede.host.runs import Runs
from ganymede.notebook.nbio import dumps_notebook
from ganymede.serve.agents import room_edits
from ganymede.serve.agents.cells import CellSnapshots
from ganymede.serve.agents.kept import ClosedNotebooks
from ganymede.serve.agents.presence import DEFAULT_IDLE, AgentPresence, caret_in
from ganymede.serve.agents.room_edits import RoomHolds
from ganymede.serve.agents.sessions import AgentSession, AgentSessions
from ganymede.serve.agents.suggestion_forks import AgentSuggestions
from ganymede.serve.agents.suggestions import (
    SuggestionBook,
)
from ganymede.serve.agents.watch import Watchers
from ganymede.serve.execution import Executions
from ganymede.serve.execution.requests import CellRequest, ExecuteRequest
from ganymede.serve.kernels.notebooks import NotebookKernels
from ganymede.serve.rooms import RoomManager
from ganymede.serve.rooms.document import notebook_content, read_shared
from ganymede.serve.rooms.forks import Forks
from ganymede.serve.rooms.room import DocumentRoom
from ganymede.serve.service import Service, detached_task, event_within

AGENTS_SETTINGS_KEY = "ganymede_agents"
SESSION_TIMEOUT = 120.0
REAP_INTERVAL = 10.0
EDIT_OPERATIONS = ("add", "edit", "delete", "move")
RUN_PARAMS = ("path", "params", "save")

P = ParamSpec("P")
R = TypeVar("R")


def _working(
    method: Callable[Concatenate[Agents, str, P], Awaitable[R]],
) -> Callable[Concatenate[Agents, str, P], Awaitable[R]]:
    """A call of a session's that works in rooms: its holds stay while it runs, and count their
    idle time from its end."""

    @functools.wraps(method)
    async def working(self: Agents, session_id: str, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.holds.in_use(session_id):
            return await method(self, session_id, *args, **kwargs)

    return working


class Agents(Service):
    """Every agent's sessions and marks, and the work their tools ask of the rooms."""

    def __init__(
        self,
        rooms: RoomManager,
        file_ids: FileIdStore,
        notebooks: Notebooks,
        log: logging.Logger,
        *,
        kernels: NotebookKernels,
        executions: Executions,
        runs: Runs,
        kernel_specs: Any,
        settle: float = 3.0,
        presence_idle: float = DEFAULT_IDLE,
        forks: Forks | None = None,
        suggest_by_default: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rooms = rooms
        self.notebooks = notebooks
        self.kernels = kernels
        self.executions = executions
        self.runs = runs
        self.kernel_specs = kernel_specs
        self.watchers = Watchers(
            rooms, file_ids, self._reader, settle=settle, clock=clock, on_new=self._start_reaper
        )
        self.cells = CellSnapshots()
        self.file_ids = file_ids
        self.log = log
        self.clock = clock
        self.marks = MarkBook(clock=clock)
        self.presence = AgentPresence(idle=presence_idle, clock=clock)
        self.holds = RoomHolds(rooms, file_ids, idle=presence_idle, on_release=self.presence.let_go)
        self.kept = ClosedNotebooks(self.marks.seen_cells, self.cells)
        rooms.observe(self.kept)
        self.sessions = AgentSessions(rooms, self.holds, self.presence, log, clock)
        self.suggest_by_default = suggest_by_default
        self.suggestions = SuggestionBook()
        self.suggesting = AgentSuggestions(forks, self.suggestions, file_ids, self._check_seen)
        self._reaper: asyncio.Task[None] | None = None

    async def stop(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        self.sessions.stop()
        self.watchers.stop()

    # Sessions

    def open_session(self, agent: str) -> AgentSession:
        session = self.sessions.open(agent)
        self._start_reaper()
        return session

    def close_session(self, session_id: str) -> None:
        session = self.sessions.close(session_id)
        if session is not None and self.sessions.started(session.agent) is None:
            self.suggestions.forget_decided(session.agent)

    # Reading

    @_working
    async def read(
        self, session_id: str, path: str | None, since: str | None, *, mark: bool = True
    ) -> dict[str, Any]:
        """The notebook as the room has it, a new mark, and with ``since`` what others changed
        since that mark. ``mark`` false reads without moving the agent's mark (a client showing
        the notebook as a resource, not the agent reading it); ``mark`` is then None."""
        session = self.sessions.get(session_id)
        previous = None
        if since is not None:
            previous = self.marks.get(since)
            if previous is None or previous.agent != session.agent:
                raise UnknownMark(since)
            path = self._path_of(previous.notebook)
        if path is None:
            raise UsageError("give the notebook's path, or since: a mark from an earlier read")
        api_path = normalize_api_path(path)
        room, notebook = await self.holds.notebook(session.id, api_path, writable=False)
        await self.sessions.show(session, room, api_path)
        content = notebook_content(notebook)
        cells = self.cells.now(room, content)
        changes = None
        if previous is not None:
            reader = self._reader(session.agent, cells.done_requests)
            report = report_changes(
                previous.states, cells.states, _authors(room), reader, since=previous.at
            )
            changes = [entry.to_json() for entry in report]
        new_mark = (
            self.marks.read(session.agent, self._file_id(api_path), cells.states) if mark else None
        )
        return {
            "path": api_path,
            "notebook": content,
            "mark": new_mark.id if new_mark is not None else None,
            "changes": changes,
        }

    async def changed(self, agent: str) -> list[dict[str, Any]]:
        """For every notebook ``agent`` holds a mark on that others changed since: the changes
        and the line that ends each tool reply. A notebook whose room closed is opened again
        (held for the agent's newest session) only when it may hold news: its file changed
        since, or the room closed holding changes the mark lacks."""
        open_rooms = self.rooms.notebook_rooms()
        file_ids = self.marks.notebooks(agent)
        answers: list[dict[str, Any]] = [
            {**s.to_json(), "changes": [], "line": s.line()}
            for s in self.suggestions.unreported(agent)
        ]
        for file_id in file_ids:
            room = open_rooms.get(file_id)
            mark = self.marks.current(agent, file_id)
            path = self.file_ids.get_path(file_id)
            if mark is None or path is None:
                continue
            if room is None:
                room = await self._reopened(agent, file_id, mark, path)
                if room is None:
                    continue
            cells = self.cells.now(room)
            if cells.states == mark.states:
                continue  # the cells as the agent saw them: nothing to report, nothing to compare
            report = report_changes(
                mark.states,
                cells.states,
                _authors(room),
                self._reader(agent, cells.done_requests),
                since=mark.at,
            )
            if report:
                answers.append(
                    {
                        "path": path,
                        "mark": mark.id,
                        "changes": [entry.to_json() for entry in report],
                        "line": changed_line(report, mark.id, path if len(file_ids) > 1 else None),
                    }
                )
        return answers

    async def _reopened(
        self, agent: str, file_id: str, mark: Mark, path: str
    ) -> DocumentRoom | None:
        """The room of a notebook whose room closed, opened again if it may hold news for
        ``agent``'s mark; None when it holds none, or cannot be opened (gone, unreadable)."""
        if self.kept.get(file_id) is None or self.kept.unchanged_since(file_id, mark):
            return None  # nothing kept (as after a restart), or nothing new since the mark
        latest = self.sessions.latest_of(agent)
        if latest is None:
            return None
        holder = latest.id
        with self.holds.in_use(holder):
            try:
                room, _ = await self.holds.notebook(holder, path, writable=False)
            except (GanymedeError, UnicodeDecodeError) as error:
                self.log.info("ganymede: %s not reopened for %s: %s", path, agent, error)
                return None
        return room

    # Editing

    @_working
    async def edit(
        self,
        session_id: str,
        path: str,
        operation: str,
        *,
        cell_id: str | None = None,
        source: str | None = None,
        cell_type: str = "code",
        after: str | None = None,
        suggest: bool | None = None,
        title: str = "",
        description: str = "",
    ) -> dict[str, Any]:
        """Add, edit, delete or move one cell; edits of a cell changed since the agent's mark
        are refused (EditRefused) and leave the mark where it was. ``suggest`` (None: the
        server's ``[agent] mode``) makes the change in a fork of its own instead."""
        if operation not in EDIT_OPERATIONS:
            raise UsageError(f"op must be one of {', '.join(EDIT_OPERATIONS)}, not {operation!r}")
        session = self.sessions.get(session_id)
        api_path = normalize_api_path(path)
        room, notebook = await self.holds.notebook(session.id, api_path)
        writer = Author(session.agent, AuthorKind.AGENT)
        file_id = self._file_id(api_path)
        if self.suggest_by_default if suggest is None else suggest:
            return await self.suggesting.suggest(
                session.agent,
                api_path,
                room,
                notebook,
                operation,
                cell_id=cell_id,
                source=source,
                cell_type=cell_type,
                after=after,
                title=title,
                description=description,
            )
        if operation == "add":
            at_end = after is None
            index = len(notebook.ycells) if at_end else room_edits.index_after(notebook, after)
            new_id = room_edits.add_cell(
                room,
                notebook,
                index,
                cell_type=cell_type,
                source=room_edits.required(source, "source"),
                writer=writer,
                mode="add",
            )
            self._moved_mark(session.agent, file_id, room, {new_id})
            await self.sessions.show(session, room, api_path, caret_in(notebook, index))
            return {"id": new_id, "index": index}
        target = room_edits.required(cell_id, "id")
        index = room_edits.index_of(notebook, target)
        self._check_seen(session.agent, file_id, room, notebook, index)
        answer: dict[str, Any] = {"id": target}
        if operation == "edit":
            room_edits.edit_source(
                room,
                notebook,
                index,
                room_edits.required(source, "source"),
                writer=writer,
                mode="edit",
            )
            answer["index"] = index
        elif operation == "delete":
            room_edits.delete_cell(room, notebook, index, writer=writer)
        else:
            if after == target:
                raise UsageError("a cell cannot move after itself")
            if after is not None:
                room_edits.index_of(notebook, after)  # CellNotFound before anything moves
            answer["index"] = room_edits.move_cell(room, notebook, index, after, writer=writer)
        self._moved_mark(session.agent, file_id, room, {target})
        at = answer.get("index")
        await self.sessions.show(
            session, room, api_path, caret_in(notebook, at) if at is not None else None
        )
        return answer

    @_working
    async def request_done(self, session_id: str, path: str, cell_id: str) -> None:
        session = self.sessions.get(session_id)
        room, notebook = await self.holds.notebook(session.id, normalize_api_path(path))
        index = room_edits.index_of(notebook, cell_id)
        writer = Author(session.agent, AuthorKind.AGENT)
        room_edits.mark_request_done(room, notebook, index, writer=writer)

    async def create(self, session_id: str, path: str, kernel: str | None) -> dict[str, Any]:
        """A new empty notebook for ``kernel`` (else the server's default); FileExistsError
        rather than overwrite anything."""
        self.sessions.get(session_id)
        api_path = normalize_api_path(path)
        if not api_path.endswith(".ipynb"):
            raise UsageError(f"{api_path}: a notebook's name ends in .ipynb")
        target = resolve(self.notebooks.root, api_path)
        if target.exists():
            raise FileExistsError(f"{api_path} exists already")
        name = kernel or self.kernels.kernel_manager.default_kernel_name
        try:
            spec = self.kernel_specs.get_kernel_spec(name)
        except NoSuchKernel:
            raise UsageError(f"this server has no kernel {name!r}") from None
        content = {
            "cells": [],
            "metadata": {
                "kernelspec": {
                    "display_name": spec.display_name,
                    "language": spec.language,
                    "name": name,
                },
                "language_info": {"name": spec.language},
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        target.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(atomic_write, target, dumps_notebook(content).encode("utf-8"))
        return {"path": api_path}

    # Running

    @_working
    async def run(
        self, session_id: str, path: str, cell_ids: Sequence[str], wait: float
    ) -> dict[str, Any]:
        """Run cells into the room on the notebook's kernel (started if none); answer with
        the cells once they ran, or as they are when ``wait`` runs out."""
        if not cell_ids or not all(isinstance(cell_id, str) for cell_id in cell_ids):
            raise UsageError("ids must be a non-empty list of cell ids")
        session = self.sessions.get(session_id)
        api_path = normalize_api_path(path)
        room, notebook = await self.holds.notebook(session.id, api_path)  # held while it runs
        file_id = self._file_id(api_path)
        kernel_id = await self.kernels.ensure(api_path, notebook_content(notebook))
        request = ExecuteRequest(
            room_edits.notebook_room_name(file_id), [CellRequest(i, None) for i in cell_ids]
        )
        writer = Author(session.agent, AuthorKind.AGENT)
        first = next(
            (i for i, ycell in enumerate(notebook.ycells) if ycell.get("id") == cell_ids[0]), None
        )
        if first is not None:  # a cell that is not there is the batch's error to report
            caret = caret_in(notebook, first)
            await self.sessions.show(session, room, api_path, caret, running=cell_ids[0])
        batch = await self.executions.submit(kernel_id, request, lambda _: writer)
        await event_within(batch.done, wait)
        self._moved_mark(session.agent, file_id, room, set(cell_ids))
        cells = [
            {**read_shared(ycell), "index": index}
            for index, ycell in enumerate(notebook.ycells)
            if ycell.get("id") in cell_ids
        ]
        return {"finished": batch.done.is_set(), "cells": cells, "error": batch.failure}

    async def kernel(self, session_id: str, path: str, action: str) -> None:
        self.sessions.get(session_id)
        api_path = normalize_api_path(path)
        if action == "restart":
            await self.kernels.restart(api_path)
        elif action == "interrupt":
            await self.kernels.interrupt(api_path)
        else:
            raise UsageError(f"action must be restart or interrupt, not {action!r}")

    async def run_notebook(
        self, session_id: str, path: str, params: Any, save: Any
    ) -> dict[str, Any]:
        """``notebooks.run`` for an agent: the host API's runs, with the server's full grant
        (an agent holds the server's token; grants limit kernels, not it)."""
        session = self.sessions.get(session_id)
        caller = Caller(
            kernel_id=f"agent-{session.id}",
            notebook=None,
            grant=Grant(read=("",), run=("",), edit_self=False),
            self_calls=False,
        )
        call: dict[str, Any] = {"path": path, "params": params if params is not None else {}}
        if save is not None:
            call["save"] = save
        return await self.runs.run(caller, Params("notebooks.run", call, RUN_PARAMS))

    def _check_seen(
        self, agent: str, file_id: str, room: DocumentRoom, notebook: YNotebook, index: int
    ) -> None:
        cell = notebook.ycells[index].to_py()
        state = notebook_states({"cells": [cell]})[0]
        mark = self.marks.current(agent, file_id)
        if not changed_since(mark, state):
            return
        authors = _authors(room).get(state.id, CellAuthors())
        stamp = authors.source or authors.placed
        by = stamp.author.name if stamp is not None else UNKNOWN_AUTHOR
        if mark is None:
            reason = "is in a notebook you have not read: call notebook_read first"
        elif mark.state_of(state.id) is None:
            reason = f"was added by {by} after your last read"
        else:
            reason = f"was changed by {by} since your last read"
        raise EditRefused(cell, by, reason)

    def _moved_mark(self, agent: str, file_id: str, room: DocumentRoom, touched: set[str]) -> None:
        self.marks.own_change(agent, file_id, self.cells.now(room).states, touched)

    # Helpers

    def _reader(self, agent: str, done: frozenset[str]) -> Reader:
        return Reader(
            name=agent,
            request_names=request_names(agent),
            session_started=self.sessions.started(agent),
            done_requests=done,
        )

    def _file_id(self, api_path: str) -> str:
        return self.file_ids.index(api_path)

    def _path_of(self, file_id: str) -> str:
        path = self.file_ids.get_path(file_id)
        if path is None:
            raise NotebookNotFound(f"the notebook of mark (file id {file_id})")
        return path

    def _start_reaper(self) -> None:
        if self._reaper is None:  # the server's loop runs once a request comes
            self._reaper = detached_task(self._reap())

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(REAP_INTERVAL)
            cutoff = self.clock() - SESSION_TIMEOUT
            for session in self.sessions.silent_since(cutoff):
                self.log.info("ganymede: agent session %s went silent, ending it", session.id)
                self.close_session(session.id)
            self.watchers.stop_idle()


def _authors(room: DocumentRoom) -> Mapping[str, CellAuthors]:
    return room.attribution.authors() if room.attribution is not None else {}
