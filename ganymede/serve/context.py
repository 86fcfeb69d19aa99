"""What the server extension shares with its handlers: config, root, file ids, grants, stops."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from ganymede.config import Config
from ganymede.core import Notebooks
from ganymede.fileid import FileIdStore
from ganymede.grant import Grants
from ganymede.host.api import Responder
from ganymede.trust.outputs import KernelOutputs

SETTINGS_KEY = "ganymede_context"

StopHook = Callable[[], Awaitable[None]]


@dataclass
class GanymedeContext:
    """One per server; handlers find it as ``self.settings[SETTINGS_KEY]``."""

    config: Config
    root: Path
    file_ids: FileIdStore
    log: logging.Logger
    grants: Grants = field(init=False)
    """Defaults from ``[host]`` over the per-notebook store; a bad ``[host]`` path fails here."""
    notebooks: Notebooks | None = None
    """The notebooks core over the root, reading open rooms (unsaved edits included); every
    door (host responder, agent API, MCP tools) reads through this one."""
    host: Responder | None = None
    """Answers the host calls of the server's kernels (their comm drivers hand calls to it)."""
    kernel_outputs: KernelOutputs = field(default_factory=KernelOutputs)
    """The rich outputs the server's kernels sent lately (their websockets and the execute
    endpoint record them), by which rooms trust the outputs a client writes."""
    _stop_hooks: list[StopHook] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.grants = Grants.from_config(self.root, self.config, self.file_ids)

    def on_stop(self, hook: StopHook) -> None:
        """Run ``hook`` when the server stops, before its kernels are shut down.

        Hooks run newest first, so what was started last (rooms saving their edits) finishes
        before what it depends on.
        """
        self._stop_hooks.append(hook)

    async def stop(self) -> None:
        """Run every stop hook, even when one fails, then close the file id store."""
        for hook in reversed(self._stop_hooks):
            try:
                await hook()
            except Exception:
                self.log.exception("ganymede: a stop step failed")
        self._stop_hooks.clear()
        self.file_ids.close()
