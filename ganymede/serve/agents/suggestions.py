"""An agent's suggestions: cell changes made in a fork of the room, for a person to accept or
reject, and the outcome the agent hears in its next reply.

One fork per suggestion (``Forks``), titled and described by the agent, so a person reviews each
on its own (jupyter-suggestions lists a room's forks). Accepting merges the fork into the room as
the accepting person's edit; rejecting deletes it. The merge is a Yjs merge of the fork's
changes into the room as it is now: text a person typed since in the same cell is kept beside
the agent's. The book here is pure bookkeeping, no I/O; forks live in server memory, and so do
suggestions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ganymede.errors import GanymedeError

ACCEPTED = "accepted"
REJECTED = "rejected"
SHORT_ID = 4
"""Hex digits of the fork's room id a suggestion goes by (more when two would share them)."""


SUGGESTION_TYPES = {"edit": "CHANGE", "delete": "DELETE", "add": "ADD"}
"""jupyter-suggestions' ``SuggestionType`` of each operation (it has no added cells: it lists a
suggestion only on a cell the notebook has, so an added cell's shows in ``ganymede suggestions``
and ``suggestions_list`` only)."""
EDITOR_MIME_TYPES = {"code": "text/x-ipython", "markdown": "text/x-ipythongfm", "raw": "text/plain"}


def fork_description(
    *,
    cell_id: str,
    path: str,
    cell_type: str,
    operation: str,
    author: dict[str, Any],
    title: str,
    description: str,
) -> str:
    """The fork's ``description``, as jupyter-suggestions' RTC manager writes and reads it: a
    JSON object naming the cell, the notebook, the editor's MIME type, the kind of suggestion and
    its author; the agent's own title and words ride along for any client to show."""
    return json.dumps(
        {
            "cellId": cell_id,
            "path": path,
            "mimeType": EDITOR_MIME_TYPES.get(cell_type, "text/plain"),
            "suggestionType": SUGGESTION_TYPES[operation],
            "metadata": {"author": author, "title": title, "description": description},
        },
        ensure_ascii=False,
    )


class UnknownSuggestion(GanymedeError, LookupError):
    """No undecided suggestion of that id (decided already, or the server restarted)."""

    def __init__(self, suggestion_id: str) -> None:
        super().__init__(f"no open suggestion {suggestion_id!r}")
        self.suggestion_id = suggestion_id


@dataclass
class Suggestion:
    fork_roomid: str
    id: str
    agent: str
    path: str
    root_roomid: str
    title: str
    description: str
    operation: str
    cell_id: str
    source_then: str | None
    """The cell's source in the room when the agent suggested (None for a new cell)."""
    outcome: str | None = None
    by: str | None = None
    changed_since: bool = False
    reported: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "fork": self.fork_roomid,
            "agent": self.agent,
            "path": self.path,
            "title": self.title,
            "description": self.description,
            "op": self.operation,
            "cell": self.cell_id,
            "outcome": self.outcome,
            "by": self.by,
            "changed_since": self.changed_since,
        }

    def line(self) -> str:
        """``@@suggestion 3f2a accepted by Thomas``: the end of the agent's next reply."""
        text = f"@@suggestion {self.id} {self.outcome} by {self.by}"
        if self.changed_since:
            text += " (the cell had changed since: both texts kept, read it again)"
        return text


class SuggestionBook:
    """Every suggestion on this server, by short id."""

    def __init__(self) -> None:
        self._by_id: dict[str, Suggestion] = {}

    def short_id(self, fork_roomid: str) -> str:
        """The shortest prefix of ``fork_roomid``, from ``SHORT_ID`` digits, no other has."""
        for length in range(SHORT_ID, len(fork_roomid) + 1):
            candidate = fork_roomid[:length]
            if candidate not in self._by_id:
                return candidate
        return fork_roomid

    def add(self, suggestion: Suggestion) -> None:
        self._by_id[suggestion.id] = suggestion

    def get(self, suggestion_id: str) -> Suggestion | None:
        return self._by_id.get(suggestion_id)

    def listed(self, path: str | None = None, *, agent: str | None = None) -> list[Suggestion]:
        return [
            s
            for s in self._by_id.values()
            if (path is None or s.path == path) and (agent is None or s.agent == agent)
        ]

    def decided(self, suggestion: Suggestion, outcome: str, by: str, changed_since: bool) -> None:
        suggestion.outcome = outcome
        suggestion.by = by
        suggestion.changed_since = changed_since

    def unreported(self, agent: str) -> list[Suggestion]:
        """The agent's decided suggestions it has not heard of yet; now it has. Once told, they
        are forgotten: a fork gone leaves nothing behind."""
        told = [s for s in self._by_id.values() if s.agent == agent and s.outcome is not None]
        for suggestion in told:
            suggestion.reported = True
            del self._by_id[suggestion.id]
        return told

    def forget_decided(self, agent: str) -> None:
        """The agent's last session ended: outcomes it did not hear go (their forks are gone
        already), so nothing outlives the agents it was for. Open ones stay for a person."""
        for suggestion in list(self._by_id.values()):
            if suggestion.agent == agent and suggestion.outcome is not None:
                del self._by_id[suggestion.id]

    def __len__(self) -> int:
        return len(self._by_id)
