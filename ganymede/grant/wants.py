"""What a notebook asks for in ``metadata.ganymede.host.wants``: shown to people, granting nothing.

A downloaded notebook can claim anything, so its wants only ever reach a person (``ganymede
grant --list``, the HTTP API) who decides; nothing here feeds a check.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def wants_of(notebook: Any) -> list[str]:
    """The strings under ``metadata.ganymede.host.wants``; anything else there is ignored."""
    wants: Any = notebook
    for key in ("metadata", "ganymede", "host", "wants"):
        if not isinstance(wants, dict):
            return []
        wants = wants.get(key)
    if not isinstance(wants, list):
        return []
    return [item for item in wants if isinstance(item, str)]


def read_wants(os_path: Path) -> list[str]:
    """The wants of the notebook file at ``os_path``; none for a file that is not a notebook."""
    try:
        return wants_of(json.loads(os_path.read_bytes()))
    except (OSError, ValueError):
        return []
