"""``ganymede suggestions [NB]``, ``ganymede suggestions accept|reject ID``: review what agents
suggested, from a shell.

Through the running server that keeps the suggestions (they live in its memory, as forks of the
notebooks' rooms): accepting merges the suggestion into the notebook as your edit, rejecting
drops it, and the agent's next reply says which and by whom.
"""

from __future__ import annotations

import asyncio
import getpass
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from ganymede.cli.output import EXIT_USAGE, fail
from ganymede.cli.server_options import TokenOption, url_option

UrlOption = url_option(
    "Review the suggestions this server keeps (its URL as `ganymede serve` prints it)."
)
COMMAND = "ganymede suggestions"
EXIT_FAILED = 1
ACTIONS = ("accept", "reject")


def command(
    arguments: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[NOTEBOOK] | accept ID | reject ID",
            help="A notebook to list the suggestions of (none: all), or a decision on one.",
            show_default=False,
        ),
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            help="Your name, as the agent hears it (default: your login).",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the result as one JSON document.")
    ] = False,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """List agents' suggestions, or accept or reject one."""
    from ganymede.errors import GanymedeError

    words = list(arguments or [])
    deciding = bool(words) and words[0] in ACTIONS
    if deciding and len(words) != 2:
        fail(f"{words[0]} takes one suggestion ID", EXIT_USAGE, COMMAND)
    if not deciding and len(words) > 1:
        fail("give one NOTEBOOK, or accept ID / reject ID", EXIT_USAGE, COMMAND)
    notebook = Path(words[0]) if words and not deciding else None
    try:
        server = _server(notebook, url, token)
        if deciding:
            name = (by or getpass.getuser()).strip()
            decided = asyncio.run(_decide(server, words[1], words[0], name))
            _print_decision(decided, as_json)
        else:
            api_path = server.api_path(notebook) if notebook is not None else None
            if notebook is not None and api_path is None:
                fail(
                    f"{notebook}: not under the root of the server at {server.url}",
                    EXIT_USAGE,
                    COMMAND,
                )
            _print_list(asyncio.run(_list(server, api_path)), as_json)
    except GanymedeError as error:
        fail(str(error), EXIT_FAILED, COMMAND)


def _server(notebook: Path | None, url: str | None, token: str | None) -> Any:
    from ganymede.client.discover import server_at, server_for

    server = server_at(url, token) if url else server_for(notebook or Path.cwd())
    if server is None:
        fail("no running server serves this directory (give --url)", EXIT_FAILED, COMMAND)
    return server


async def _list(server: Any, api_path: str | None) -> list[dict[str, Any]]:
    from ganymede.mcp.client import AgentClient

    async with AgentClient(server) as client:
        return await client.suggestions(api_path, None)


async def _decide(server: Any, suggestion_id: str, action: str, by: str) -> dict[str, Any]:
    from ganymede.mcp.client import AgentClient

    async with AgentClient(server) as client:
        return await client.decide(suggestion_id, action, by)


def _print_list(suggestions: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print(json.dumps({"suggestions": suggestions}, ensure_ascii=False))
        return
    if not suggestions:
        print("No suggestions.")
    for s in suggestions:
        state = f"{s['outcome']} by {s['by']}" if s.get("outcome") else "open"
        where = f"{s['path']}  {s['op']} cell {s['cell']}"
        print(f"{s['id']}  {where}  {s['agent']}: {s['title']}  [{state}]")
        if s.get("description"):
            print(f"      {s['description']}")


def _print_decision(suggestion: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps({"suggestion": suggestion}, ensure_ascii=False))
        return
    print(f"{suggestion['id']} {suggestion['outcome']} ({suggestion['path']})")
    if suggestion.get("changed_since"):
        print("The cell had changed since it was suggested: both texts are in it now.")
