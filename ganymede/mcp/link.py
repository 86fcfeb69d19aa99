"""The MCP door's hold on the server: its agent session, kept alive, and what it has read.

The session is opened with the agent's name: ``--agent``, else the MCP client's name, which is
known only once the client has introduced itself, so without ``--agent`` it opens on the first
call. A session the server forgot (it restarted, or dropped us) is opened again and the call
retried once; so is a call to a server that stopped answering, once ``rediscover`` finds the
one now serving the directory (a restarted ``ganymede serve`` listens on another port). The
session is deleted when the door closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ganymede.client.discover import ServerInfo
from ganymede.errors import GanymedeError, ServerUnreachable, UnknownSession
from ganymede.mcp.client import AgentClient

KEEP_ALIVE_INTERVAL = 30.0  # the server drops a session silent for 120 s

log = logging.getLogger("ganymede.mcp")
T = TypeVar("T")


class AgentLink:
    """One agent session on one server, for the tools to call the agent API under."""

    def __init__(
        self,
        client: AgentClient,
        agent: str | None = None,
        rediscover: Callable[[], ServerInfo | None] | None = None,
    ) -> None:
        self.client = client
        self.rediscover = rediscover
        self.fixed_agent = agent
        self.agent: str | None = None
        self.session: str | None = None
        self.read_paths: set[str] = set()
        self.languages: dict[str, str] = {}
        self._opening = asyncio.Lock()
        self._keep_alive: asyncio.Task[None] | None = None

    async def open(self, client_name: str | None) -> str:
        """The session id, opening the session under ``--agent`` or the client's name."""
        async with self._opening:
            if self.session is None:
                self.agent = self.fixed_agent or client_name or "agent"
                self.session = await self.client.open_session(self.agent)
                if self._keep_alive is None:
                    self._keep_alive = asyncio.create_task(self._keep_alive_loop())
            return self.session

    async def call(self, client_name: str | None, action: Callable[[str], Awaitable[T]]) -> T:
        """``action(session)``, reopening the session once if the server forgot it."""
        session = None
        try:
            session = await self.open(client_name)
            return await action(session)
        except UnknownSession:
            if self.session == session:
                self.session = None
        except ServerUnreachable:
            if not await self._moved():
                raise
        return await action(await self.open(client_name))

    async def changed_lines(self) -> list[str]:
        """The ``@@changed`` line of each notebook others changed since this agent's mark."""
        if self.agent is None:
            return []
        return [str(entry["line"]) for entry in await self.client.changed(self.agent)]

    async def close(self) -> None:
        if self._keep_alive is not None:
            self._keep_alive.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keep_alive
        if self.session is not None:
            with contextlib.suppress(GanymedeError):
                await self.client.close_session(self.session)
            self.session = None
        await self.client.aclose()

    async def _moved(self) -> bool:
        """Whether the server now answers elsewhere; if so, talk to it (with a new session)."""
        found = self.rediscover() if self.rediscover is not None else None
        if found is None or found.url == self.client.server.url:
            return False
        log.info("ganymede mcp: the server moved to %s", found.url)
        await self.client.aclose()
        self.client = AgentClient(found)
        self.session = None
        return True

    async def _keep_alive_loop(self) -> None:
        while True:
            await asyncio.sleep(KEEP_ALIVE_INTERVAL)
            session = self.session
            if session is None:
                continue
            try:
                await self.client.keep_alive(session)
            except UnknownSession:
                self.session = None  # the next call opens a new one
            except GanymedeError as error:
                log.warning("ganymede mcp: keep-alive failed: %s", error)
