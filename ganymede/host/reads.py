"""The read calls: notebooks.list, read, search and results, under the caller's read grant.

Every path a call names is checked before the core reads it; listings and search hits are
checked again one by one, since a symlink inside a granted folder may lead to one that is not.
A notebook may always read itself (the grant rules say so), so ``self.*`` always has hashes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ganymede.core import Notebooks
from ganymede.core.notebooks import SEARCH_LIMIT_DEFAULT
from ganymede.host.api import Caller
from ganymede.host.params import Params

if TYPE_CHECKING:
    from ganymede.grant import Grants

ROOT = ""
"""The API path of the root: a read grant naming it covers every path the core can reach."""


class Reads:
    """The read methods over one notebooks core, checked by one set of grants."""

    def __init__(self, notebooks: Notebooks, grants: Grants) -> None:
        self.notebooks = notebooks
        self.grants = grants

    def list(self, caller: Caller, params: Params) -> list[dict[str, Any]]:
        directory = self._readable(caller, params.text("dir", ""))
        entries = self.notebooks.list(directory)
        return [entry for entry in entries if self._may_read(caller, entry["path"])]

    def read(self, caller: Caller, params: Params) -> dict[str, Any]:
        return self.notebooks.read(self._readable(caller, params.text("path")))

    def results(self, caller: Caller, params: Params) -> dict[str, Any]:
        return self.notebooks.results(self._readable(caller, params.text("path")))

    def search(self, caller: Caller, params: Params) -> dict[str, Any]:
        directory = self._readable(caller, params.text("dir", ""))
        found = self.notebooks.search(
            params.text("query"),
            dir=directory,
            outputs=params.flag("outputs", False),
            cell_type=params.optional_text("cell_type"),
            limit=params.integer("limit", SEARCH_LIMIT_DEFAULT),
        )
        hits = [hit for hit in found["hits"] if self._may_read(caller, hit["path"])]
        hidden = len(found["hits"]) - len(hits)
        return {**found, "hits": hits, "total": found["total"] - hidden}

    def _readable(self, caller: Caller, path: str) -> str:
        return self.grants.check_read(caller.grant, caller.notebook, path)

    def _may_read(self, caller: Caller, path: str) -> bool:
        if ROOT in caller.grant.read:
            return True  # the whole root: the core never lists what leads out of it
        return self.grants.may_read(caller.grant, caller.notebook, path)
