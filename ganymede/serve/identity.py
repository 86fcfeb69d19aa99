"""Who is logged in on a request, as a name people would recognise."""

from __future__ import annotations

from typing import Any

NAME_KEYS = ("display_name", "name", "username")
"""jupyter_server's ``User`` fields, the friendliest first."""


def login_name(user: Any) -> str | None:
    """The first non-empty name jupyter_server's user gives; None for none."""
    for key in NAME_KEYS:
        name = getattr(user, key, None)
        if isinstance(name, str) and name.strip():
            return name.strip()
    return None
