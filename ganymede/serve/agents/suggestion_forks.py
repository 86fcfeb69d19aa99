"""Suggestions as the server makes and settles them: an agent's cell change made in a fork of
the room, and a person's accept (merge) or reject (delete) of that fork.

The bookkeeping (what was suggested, decided, reported) is ``suggestions.SuggestionBook``; this
is the work in the rooms and forks. A person decides through the API or in the page (deleting
the fork through jupyter-suggestions), and the agent hears the outcome in its next reply.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import Any

from jupyter_ydoc import YNotebook

from ganymede.agent import Author, AuthorKind
from ganymede.agent.presence import agent_user, display_name
from ganymede.core import normalize_api_path
from ganymede.errors import UsageError
from ganymede.fileid import FileIdStore
from ganymede.serve.agents import room_edits
from ganymede.serve.agents.suggestions import (
    ACCEPTED,
    REJECTED,
    Suggestion,
    SuggestionBook,
    UnknownSuggestion,
    fork_description,
)
from ganymede.serve.rooms.forks import Forks, UnknownFork
from ganymede.serve.rooms.room import DocumentRoom

SUGGESTED_OPERATIONS = ("add", "edit", "delete")

SeenCheck = Callable[[str, str, DocumentRoom, YNotebook, int], None]
"""Raises EditRefused unless agent (1st) saw the cell at index (5th) as it is now."""


class AgentSuggestions:
    """Suggestions made in forks of the rooms, and their outcomes; off on a server keeping no
    forks."""

    def __init__(
        self,
        forks: Forks | None,
        book: SuggestionBook,
        file_ids: FileIdStore,
        check_seen: SeenCheck,
    ) -> None:
        self.forks = forks
        self.book = book
        self.file_ids = file_ids
        self.check_seen = check_seen

    async def suggest(
        self,
        agent: str,
        api_path: str,
        room: DocumentRoom,
        notebook: YNotebook,
        operation: str,
        *,
        cell_id: str | None,
        source: str | None,
        cell_type: str,
        after: str | None,
        title: str,
        description: str,
    ) -> dict[str, Any]:
        """The change made in a new fork of the room, for a person to accept or reject."""
        if self.forks is None:
            raise UsageError("this server keeps no forks: suggestions are off")
        if operation not in SUGGESTED_OPERATIONS:
            raise UsageError(f"only {', '.join(SUGGESTED_OPERATIONS)} can be suggested")
        file_id = self.file_ids.index(api_path)
        source_then = None
        if operation == "add":
            room_edits.required(source, "source")
            if cell_type not in room_edits.CELL_TYPES:
                raise UsageError(f"cell_type must be one of {', '.join(room_edits.CELL_TYPES)}")
            if after is not None:
                room_edits.index_of(notebook, after)  # CellNotFound before any fork
        else:
            target = room_edits.required(cell_id, "id")
            index = room_edits.index_of(notebook, target)
            self.check_seen(agent, file_id, room, notebook, index)
            source_then = str(notebook.ycells[index].get("source") or "")
            if operation == "edit":
                room_edits.required(source, "source")
        root_roomid = room_edits.notebook_room_name(file_id)
        title = title or f"{display_name(agent)}: {operation} a cell"
        if operation == "add":
            target = uuid.uuid4().hex[:16]  # the new cell's id, known before the fork exists
        else:
            cell_type = str(notebook.ycells[index].get("cell_type") or "code")
        fork = await self.forks.create(
            root_roomid,
            title=title,
            description=fork_description(
                cell_id=target,
                path=api_path,
                cell_type=cell_type,
                operation=operation,
                author=agent_user(agent),
                title=title,
                description=description,
            ),
            username=agent,
        )
        forked = fork.room.document.notebook  # a notebook room's fork holds a notebook
        writing = room_edits.ForkWriting(forked)
        writer = Author(agent, AuthorKind.AGENT)
        if operation == "add":
            index = len(forked.ycells) if after is None else room_edits.index_after(forked, after)
            room_edits.add_cell(
                writing,
                forked,
                index,
                cell_type=cell_type,
                source=str(source),
                writer=writer,
                mode="suggest",
                cell_id=target,
            )
        elif operation == "edit":
            room_edits.edit_source(
                writing, forked, index, str(source), writer=writer, mode="suggest"
            )
        # A deletion's fork keeps the cell: jupyter-suggestions shows the cell from the fork and
        # deletes it there as it accepts; ``decide`` deletes it when accepting otherwise.
        suggestion = Suggestion(
            fork_roomid=fork.roomid,
            id=self.book.short_id(fork.roomid),
            agent=agent,
            path=api_path,
            root_roomid=root_roomid,
            title=title,
            description=description,
            operation=operation,
            cell_id=target,
            source_then=source_then,
        )
        self.book.add(suggestion)
        # jupyter-suggestions accepts by merging the fork and rejects by deleting it: the
        # person's decision, which the agent hears in its next reply.
        self.forks.decided_by(fork.roomid, functools.partial(self._decided_in_page, suggestion))
        return {"suggestion": suggestion.to_json()}

    async def _decided_in_page(self, suggestion: Suggestion, accept: bool, by: Author) -> None:
        """A person deleted the suggestion's fork (its fork's ``decide``)."""
        try:
            await self.decide(suggestion.id, accept, by.name)
        except UnknownSuggestion:  # decided meanwhile: its fork is gone as far as they know
            raise UnknownFork(suggestion.fork_roomid) from None

    def listed(self, path: str | None, agent: str | None = None) -> list[dict[str, Any]]:
        api_path = normalize_api_path(path) if path else None
        return [s.to_json() for s in self.book.listed(api_path, agent=agent)]

    async def decide(self, suggestion_id: str, accept: bool, by: str) -> dict[str, Any]:
        """Accept (merge the fork as ``by``'s edit) or reject (delete it) a suggestion."""
        if self.forks is None:
            raise UsageError("this server keeps no forks: suggestions are off")
        if not by.strip():
            raise UsageError("by must name the person deciding")
        suggestion = self.book.get(suggestion_id)
        if suggestion is None or suggestion.outcome is not None:
            raise UnknownSuggestion(suggestion_id)
        fork = self.forks.get(suggestion.fork_roomid)
        changed = False
        if suggestion.source_then is not None and isinstance(fork.root.document.shared, YNotebook):
            now = next(
                (
                    str(ycell.get("source") or "")
                    for ycell in fork.root.document.shared.ycells
                    if ycell.get("id") == suggestion.cell_id
                ),
                None,
            )
            changed = now != suggestion.source_then
        person = Author(by.strip(), AuthorKind.PERSON)
        forked = fork.room.document.shared
        if accept and suggestion.operation == "delete" and isinstance(forked, YNotebook):
            index = next(
                (
                    i
                    for i, ycell in enumerate(forked.ycells)
                    if ycell.get("id") == suggestion.cell_id
                ),
                None,
            )
            if index is not None:  # else the page deleted it in the fork as it accepted
                writing = room_edits.ForkWriting(forked)
                room_edits.delete_cell(writing, forked, index, writer=person)
        await self.forks.delete(fork.roomid, merge=accept, author=person, username=by.strip())
        outcome = ACCEPTED if accept else REJECTED
        self.book.decided(suggestion, outcome, by.strip(), changed)
        return {"suggestion": suggestion.to_json()}
