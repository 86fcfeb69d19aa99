"""A user's own contents manager, as a server might be configured with one (jupytext's is the
common case): synchronous, built on jupyter_server's, adding something of its own to models."""

from __future__ import annotations

from typing import Any

from jupyter_server.services.contents.largefilemanager import LargeFileManager


class MarkedContentsManager(LargeFileManager):
    def get(self, path: str, content: bool = True, **kwargs: Any) -> dict[str, Any]:
        model: dict[str, Any] = super().get(path, content=content, **kwargs)
        model["marked"] = True
        return model
