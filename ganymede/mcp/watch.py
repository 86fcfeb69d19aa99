"""``ganymede mcp watch``: settled changes, one per line, for as long as it runs.

It long-polls ``/api/agent/watch`` with the cursor of its last answer. When the server goes
away it finds it again (the same URL, or the running server for the directory), waiting longer
between tries up to ``MAX_BACKOFF``. The cursor and ``epoch`` outlive a lost connection: the
same server goes on after the last event printed, so none is printed twice or skipped, and a
restarted one (a new epoch, nothing from before) hands over all it has seen since it started.
The first server it reaches is asked where it stands, so a watch prints what happens from its
start, not what the server's watcher saw before it came.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ganymede.client.discover import ServerInfo
from ganymede.errors import GanymedeError, ServerUnreachable
from ganymede.mcp.client import AgentClient

FIRST_BACKOFF = 0.5
MAX_BACKOFF = 10.0

log = logging.getLogger("ganymede.mcp")


@dataclass(frozen=True)
class WatchOptions:
    agent: str
    every_change: bool
    settle: float | None
    notebooks: tuple[Path, ...] = ()


class Watcher:
    """Calls ``emit`` with every settled change worth a line, until cancelled."""

    def __init__(
        self,
        find_server: Callable[[], ServerInfo | None],
        options: WatchOptions,
        emit: Callable[[Mapping[str, Any]], None],
        connected: Callable[[ServerInfo], None] = lambda server: None,
    ) -> None:
        self.find_server = find_server
        self.options = options
        self.emit = emit
        self.connected = connected
        self.backoff = FIRST_BACKOFF
        self.cursor = 0
        self.epoch: str | None = None

    async def run(self) -> None:
        while True:
            server = self.find_server()
            if server is None:
                log.info("ganymede mcp watch: no server serves this directory yet")
            else:
                try:
                    await self._poll(server)
                except ServerUnreachable as error:
                    log.info("ganymede mcp watch: %s", error)
            await asyncio.sleep(self.backoff)
            self.backoff = min(self.backoff * 2, MAX_BACKOFF)

    async def _poll(self, server: ServerInfo) -> None:
        wanted = _api_paths(server, self.options.notebooks)
        async with AgentClient(server) as client:
            if self.epoch is None:  # from now on: not the server watcher's past
                now = await client.watch(
                    self.options.agent,
                    self.options.every_change,
                    self.options.settle,
                    wait=0,
                )
                self.epoch, self.cursor = now.get("epoch"), int(now.get("cursor", 0))
            self.connected(server)
            while True:
                answer = await client.watch(
                    self.options.agent,
                    self.options.every_change,
                    self.options.settle,
                    self.cursor,
                    self.epoch,
                )
                self.backoff = FIRST_BACKOFF
                self.epoch = answer.get("epoch", self.epoch)
                self.cursor = int(answer.get("cursor", self.cursor))
                for event in answer.get("events") or []:
                    if wanted is not None and event.get("path") not in wanted:
                        continue
                    self.emit(event)


def _api_paths(server: ServerInfo, notebooks: Iterable[Path]) -> set[str] | None:
    """The notebooks to report on, as the server names them; None: every notebook."""
    chosen = list(notebooks)
    if not chosen:
        return None
    paths = set()
    for notebook in chosen:
        api_path = server.api_path(notebook)
        if api_path is None:
            raise GanymedeError(f"{notebook}: not under the server's root")
        paths.add(api_path)
    return paths
