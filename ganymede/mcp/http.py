"""``ganymede mcp --http [HOST:]PORT``: the door served over MCP's Streamable HTTP transport.

The transport is the MCP SDK's own (its session manager, as an ASGI app at ``/mcp``) under
uvicorn; every HTTP client shares the door's one agent session, as stdio's one client has it.
The tools edit and run notebooks, so every request must carry ``Authorization: Bearer
<token>``. The socket is bound before the door opens, so a busy port fails at once, before a
server is embedded. The door owns the process's signals: Ctrl-C or SIGTERM end the MCP
sessions, then uvicorn, then the door closes as stdio's does when its client hangs up.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import secrets
import signal
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import uvicorn
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ganymede.errors import UsageError
from ganymede.mcp.door import DoorOptions, open_door

DEFAULT_HOST = "127.0.0.1"
MCP_PATH = "/mcp"
MASKED_TOKEN = "..."  # as ganymede serve prints a token handed in
# Once the MCP sessions have ended, what uvicorn still waits on is a request mid-answer.
GRACEFUL_SHUTDOWN = 3.0


@dataclass(frozen=True)
class Endpoint:
    """Where the door listens and the token it asks for; the token is printed in full only
    when it was made here (one handed in is the caller's already, and a log is no place for
    it)."""

    host: str
    listener: socket.socket
    token: str
    token_generated: bool

    @property
    def url(self) -> str:
        port = self.listener.getsockname()[1]
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{port}{MCP_PATH}"

    @property
    def shown_token(self) -> str:
        return self.token if self.token_generated else MASKED_TOKEN


def parse_address(text: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[IPV6]:PORT`` as (host, port); port 0 picks a free one."""
    host, separator, port_text = text.rpartition(":")
    if not separator:
        host = DEFAULT_HOST
    elif host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        _check_ipv6(host, text)
    elif ":" in host:
        raise UsageError(f"--http {text!r}: write an IPv6 address in brackets, as [::1]:8000")
    if not host:
        raise UsageError(f"--http {text!r}: the host before ':' is empty")
    if not (port_text.isascii() and port_text.isdigit()) or not 0 <= int(port_text) <= 65535:
        raise UsageError(f"--http {text!r}: the port must be a number from 0 to 65535")
    return host, int(port_text)


def _check_ipv6(host: str, text: str) -> None:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        raise UsageError(f"--http {text!r}: {host!r} is not an IPv6 address") from None


def endpoint(address: str, token: str | None) -> Endpoint:
    """Bind ``address`` (``[HOST:]PORT``) now; a busy port or an unknown host is a usage error."""
    if token is not None and not token.strip():
        raise UsageError("--http-token is empty: give a token, or leave it out for a random one")
    host, port = parse_address(address)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise UsageError(f"--http {address!r}: unknown host {host!r} ({error.strerror})") from None
    try:
        listener = socket.create_server((host, port), family=family)
    except OSError as error:  # its message also names the address, which ours does already
        reason = os.strerror(error.errno) if error.errno else str(error)
        raise UsageError(f"--http {address!r}: cannot listen there: {reason}") from None
    if token is None:
        return Endpoint(host, listener, secrets.token_hex(24), token_generated=True)
    return Endpoint(host, listener, token, token_generated=False)


class BearerGate:
    """Lets through only HTTP requests that carry the endpoint's bearer token; answers the
    others 401 with the reason, in the JSON shape OAuth's bearer errors have (RFC 6750)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            reason = self._refusal(Headers(scope=scope).get("authorization"))
            if reason is not None:
                refusal = JSONResponse(
                    {"error": "invalid_token", "error_description": reason},
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer realm="ganymede mcp"'},
                )
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, authorization: str | None) -> str | None:
        if authorization is None:
            return (
                "this endpoint needs the header 'Authorization: Bearer <token>', with the "
                "token ganymede mcp --http printed or was given"
            )
        if not secrets.compare_digest(authorization.encode(), self.expected):
            return "the bearer token is not this endpoint's"
        return None


class _Uvicorn(uvicorn.Server):
    """uvicorn, minus its signal handlers: the door stops it, and then closes itself."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_http(options: DoorOptions, where: Endpoint) -> bool:
    """Serve MCP over HTTP until Ctrl-C or SIGTERM; True if a server was embedded.

    The MCP sessions end first (the SDK's session manager stops, which ends every client's
    event stream), then uvicorn, which would otherwise wait on those streams.
    """
    async with open_door(options) as opened:
        mcp = opened.door.mcp
        app = mcp.streamable_http_app(streamable_http_path=MCP_PATH, host=where.host)
        config = uvicorn.Config(
            BearerGate(app, where.token),
            lifespan="off",  # the session manager runs here, to be stopped first
            log_config=None,  # the process's logging, to stderr
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN,
        )
        server = _Uvicorn(config)
        async with mcp.session_manager.run():
            serving = asyncio.ensure_future(server.serve(sockets=[where.listener]))
            print(
                f"ganymede mcp: serving MCP at {where.url} "
                f"(header 'Authorization: Bearer {where.shown_token}')",
                file=sys.stderr,
                flush=True,
            )
            await _until_stopped(server, serving)
        server.should_exit = True
        await serving
    return opened.embedded


async def _until_stopped(server: uvicorn.Server, serving: asyncio.Future[None]) -> None:
    """Until Ctrl-C or SIGTERM (or uvicorn ending on its own); a second one makes uvicorn
    stop waiting for its clients."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()

    def stop() -> None:
        if stopping.is_set():
            server.force_exit = True
        stopping.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop)
    stopped = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
