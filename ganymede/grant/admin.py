"""Showing, setting and revoking notebooks' grants for people: what the HTTP API and the CLI's
direct path share, so a grant set either way reads the same.

Setting a grant gives the notebook a file id if it has none yet; showing never does, so a
notebook no one granted anything keeps no trace in either store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ganymede.errors import NotebookNotFound
from ganymede.fileid import os_path_of
from ganymede.grant.model import Grant, NotebookGrant
from ganymede.grant.paths import normalize_target
from ganymede.grant.policy import Grants
from ganymede.grant.wants import read_wants


@dataclass(frozen=True)
class NotebookGrants:
    """One notebook as a person sees it: its own keys, the grant in force, and what it wants."""

    path: str
    file_id: str | None
    own: NotebookGrant
    effective: Grant
    wants: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "id": self.file_id,
            "grant": self.own.to_json(),
            "effective": self.effective.to_json(),
            "wants": self.wants,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NotebookGrants:
        """What a server answered; trusted to be well formed, since the server wrote it."""
        return cls(
            path=data["path"],
            file_id=data["id"],
            own=NotebookGrant.from_json(data["grant"], "server answer"),
            effective=_grant(data["effective"]),
            wants=list(data["wants"]),
        )


@dataclass(frozen=True)
class Overview:
    """The defaults and every notebook under the root with a grant of its own, by path."""

    defaults: Grant
    notebooks: list[NotebookGrants]

    def to_json(self) -> dict[str, Any]:
        return {
            "defaults": self.defaults.to_json(),
            "notebooks": [view.to_json() for view in self.notebooks],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Overview:
        return cls(
            _grant(data["defaults"]), [NotebookGrants.from_json(view) for view in data["notebooks"]]
        )


class GrantAdmin:
    """Per-notebook grants under one root, addressed by API path."""

    def __init__(self, grants: Grants) -> None:
        self.grants = grants

    def show(self, api_path: str) -> NotebookGrants:
        """NotebookNotFound when there is no such file."""
        path = self._existing(api_path)
        file_id = self.grants.file_ids.get_id(path)
        own = self.grants.store.get(file_id) if file_id is not None else None
        return self._view(path, file_id, own or NotebookGrant())

    def overview(self) -> Overview:
        """Notebooks whose file is gone or lies under another root are left out."""
        views = []
        for file_id, stored in self.grants.store.all().items():
            path = self.grants.file_ids.get_path(file_id)
            if path is not None:
                views.append(self._view(path, file_id, stored.grant))
        return Overview(self.grants.defaults, sorted(views, key=lambda view: view.path))

    def put(self, api_path: str, own: NotebookGrant) -> NotebookGrants:
        """Make ``own`` the notebook's grant; one that sets no key removes it."""
        path = self._existing(api_path)
        file_id = self.grants.file_ids.index(path)
        self.grants.store.set(file_id, own, path)
        return self._view(path, file_id, own)

    def delete(self, api_path: str) -> NotebookGrants:
        """The notebook follows the defaults again."""
        path = self._existing(api_path)
        file_id = self.grants.file_ids.get_id(path)
        if file_id is not None:
            self.grants.store.delete(file_id)
        return self._view(path, file_id, NotebookGrant())

    def _existing(self, api_path: str) -> str:
        path = normalize_target(api_path)
        if not os_path_of(self.grants.root, path).is_file():
            raise NotebookNotFound(path)
        return path

    def _view(self, path: str, file_id: str | None, own: NotebookGrant) -> NotebookGrants:
        wants = read_wants(os_path_of(self.grants.root, path))
        return NotebookGrants(path, file_id, own, own.over(self.grants.defaults), wants)


def _grant(data: dict[str, Any]) -> Grant:
    return Grant(tuple(data["read"]), tuple(data["run"]), bool(data["edit_self"]))
