"""``ganymede mcp`` (the MCP door, over stdio or HTTP), ``ganymede mcp watch`` and
``ganymede mcp changes``.

All three talk to the running server that serves the directory (``--url``/``--token`` name
another); ``ganymede mcp`` embeds one when none runs. ``changes`` is made for agent hooks: it
never fails a person's prompt, so with no server or nothing changed it prints nothing, exit 0.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ganymede.cli.output import EXIT_USAGE, fail
from ganymede.cli.server_options import TokenOption, url_option

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ganymede.client.discover import ServerInfo

COMMAND = "ganymede mcp"
EXIT_FAILED = 1
HOOKS = ("user-prompt", "post-tool")
DEFAULT_AGENT = "claude-code"  # the name Claude Code gives itself as an MCP client
# Not GANYMEDE_TOKEN: that one is the --url server's, and this guards the --http endpoint.
MCP_TOKEN_VARIABLE = "GANYMEDE_MCP_TOKEN"

app = typer.Typer(name="mcp", add_completion=False, rich_markup_mode=None)

UrlOption = url_option(
    "The server's URL, as `ganymede serve` prints it (default: the one serving here)."
)


@app.callback(invoke_without_command=True)
def door(
    context: typer.Context,
    url: UrlOption = None,
    token: TokenOption = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            metavar="NAME",
            help="The agent's name for marks and requests (default: the MCP client's name).",
            show_default=False,
        ),
    ] = None,
    root: Annotated[
        Path | None,
        typer.Option(
            "--root",
            metavar="DIR",
            help="Find or embed the server for DIR (default: the current directory).",
            show_default=False,
        ),
    ] = None,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="[HOST:]PORT",
            help="Serve MCP over Streamable HTTP at http://HOST:PORT/mcp instead of stdio "
            "(host 127.0.0.1 by default; port 0 picks a free one).",
            show_default=False,
        ),
    ] = None,
    http_token: Annotated[
        str | None,
        typer.Option(
            "--http-token",
            metavar="TOKEN",
            help="With --http: the bearer token clients must send (default: "
            f"${MCP_TOKEN_VARIABLE}, else a random one).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """An MCP server on stdio (or HTTP): a coding agent reads, edits and runs notebooks
    through rooms.

    Talks to the server serving the directory, else starts one in this process (on a free
    loopback port, with its runtime file, so JupyterLab and `ganymede mcp watch` can join).
    With --http it prints its URL and token on stderr and serves until Ctrl-C.
    """
    if context.invoked_subcommand is not None:
        return
    import asyncio

    from ganymede.config import load_config
    from ganymede.errors import ConfigError, GanymedeError, UsageError
    from ganymede.mcp.door import DoorOptions
    from ganymede.process_exit import leave_now

    if http is None and http_token is not None:
        fail("--http-token goes with --http", EXIT_USAGE, COMMAND)
    served = (root if root is not None else Path.cwd()).resolve()
    if not served.is_dir():
        fail(f"{served}: not a directory", EXIT_USAGE, COMMAND)
    try:
        config = load_config(None, served)
    except ConfigError as error:
        fail(str(error), EXIT_USAGE, COMMAND)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    options = DoorOptions(url, token, agent, served, config.source)
    if http is None:
        from ganymede.mcp.stdio import serve_stdio

        serving = serve_stdio(options)
    else:
        from ganymede.mcp.http import endpoint, serve_http

        try:
            given = http_token if http_token is not None else os.environ.get(MCP_TOKEN_VARIABLE)
            serving = serve_http(options, endpoint(http, given))
        except UsageError as error:
            fail(str(error), EXIT_USAGE, COMMAND)
    try:
        embedded = asyncio.run(serving)
    except KeyboardInterrupt:
        leave_now()  # an embedded server's threads would hold the exit
    except GanymedeError as error:
        fail(str(error), EXIT_FAILED, COMMAND)
    if embedded:
        leave_now()


@app.command("watch")
def watch_command(
    notebooks: Annotated[
        list[Path] | None,
        typer.Argument(metavar="NB", help="Only these notebooks.", show_default=False),
    ] = None,
    every_change: Annotated[
        bool, typer.Option("--all", help="Every settled change by others, not only requests.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    settle: Annotated[
        float | None,
        typer.Option(
            "--settle",
            metavar="S",
            min=0,
            help="Seconds without edits before a notebook counts as settled ([agent] settle).",
            show_default=False,
        ),
    ] = None,
    agent: Annotated[
        str,
        typer.Option(
            "--agent",
            metavar="NAME",
            help="Requests addressed to this agent, changes by others than it.",
        ),
    ] = DEFAULT_AGENT,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Print one line per settled change: new request cells (@agent …), or with --all every
    change by others. Keeps running, and finds the server again when it restarts."""
    import asyncio

    from ganymede.mcp.lines import watch_json, watch_line
    from ganymede.mcp.watch import Watcher, WatchOptions

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

    def emit(event: Mapping[str, Any]) -> None:
        print(watch_json(event) if as_json else watch_line(event), flush=True)

    def connected(server: ServerInfo) -> None:
        kind = "every change by others" if every_change else f"requests to {agent}"
        print(f"ganymede mcp watch: watching {server.url} for {kind}", file=sys.stderr, flush=True)

    options = WatchOptions(agent, every_change, settle, tuple(notebooks or ()))
    watcher = Watcher(lambda: _find_server(url, token), options, emit, connected)
    try:
        asyncio.run(watcher.run())
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
    except BrokenPipeError:  # the reader went away (`… | head -1`): done, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(0) from None


@app.command("changes")
def changes_command(
    agent: Annotated[
        str,
        typer.Option(
            "--agent", metavar="NAME", help="Whose read marks to compare with.", show_default=False
        ),
    ],
    notebooks: Annotated[
        list[Path] | None,
        typer.Argument(metavar="NB", help="Only these notebooks.", show_default=False),
    ] = None,
    hook: Annotated[
        str | None,
        typer.Option(
            "--hook",
            metavar="EVENT",
            help="Answer as a Claude Code hook: user-prompt or post-tool.",
            show_default=False,
        ),
    ] = None,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """What others changed since the agent's last read of each notebook; nothing when nothing
    changed or no server runs (exit 0 either way, so a hook never blocks a prompt)."""
    import asyncio

    from ganymede.errors import GanymedeError
    from ganymede.mcp.client import AgentClient
    from ganymede.mcp.lines import changes_text, hook_output

    if hook is not None:
        if hook not in HOOKS:
            fail(f"--hook must be one of {', '.join(HOOKS)}, not {hook!r}", EXIT_USAGE, COMMAND)
        _drain_stdin()
    server = _find_server(url, token)
    if server is None:
        return

    async def changed() -> list[dict[str, Any]]:
        async with AgentClient(server) as client:
            return await client.changed(agent)

    try:
        notebooks_changed = asyncio.run(changed())
    except GanymedeError as error:
        logging.getLogger("ganymede.mcp").debug("no changes to report: %s", error)
        return
    wanted = {server.api_path(notebook) for notebook in notebooks or ()}
    if wanted:
        notebooks_changed = [entry for entry in notebooks_changed if entry["path"] in wanted]
    if not notebooks_changed:
        return
    text = changes_text(notebooks_changed)
    print(hook_output(hook, text) if hook is not None else text)


def _find_server(url: str | None, token: str | None) -> ServerInfo | None:
    from ganymede.client.discover import server_at, server_for

    if url is not None:
        return server_at(url, token)
    return server_for(Path.cwd())


def _drain_stdin() -> None:
    """Read the hook's JSON, as a hook must, and leave it: the server knows what changed."""
    if sys.stdin is None or sys.stdin.isatty():
        return
    with contextlib.suppress(OSError):  # a closed stdin: nothing to read
        sys.stdin.read()
