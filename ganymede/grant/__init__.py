"""Grants: what each notebook's kernel may ask the server for, through the host API.

Defaults come from ``[host]`` in ganymede.toml; a notebook's own grant, kept by file id in
``ganymede_grants.toml``, replaces them key by key. ``Grants`` is the policy the host responder
asks; ``paths`` holds the pure matching rules it applies once symlinks are resolved.
"""

from __future__ import annotations

from ganymede.grant.admin import GrantAdmin, NotebookGrants, Overview
from ganymede.grant.changes import Change, granting, parse_change, revoking
from ganymede.grant.model import KEYS, NO_GRANT, Grant, NotebookGrant, grant_from_config
from ganymede.grant.policy import Grants
from ganymede.grant.store import STORE_NAME, GrantStore, StoredGrant, default_store_path
from ganymede.grant.wants import read_wants, wants_of

__all__ = [
    "KEYS",
    "NO_GRANT",
    "STORE_NAME",
    "Change",
    "Grant",
    "GrantAdmin",
    "GrantStore",
    "Grants",
    "NotebookGrant",
    "NotebookGrants",
    "Overview",
    "StoredGrant",
    "default_store_path",
    "grant_from_config",
    "granting",
    "parse_change",
    "read_wants",
    "revoking",
    "wants_of",
]
