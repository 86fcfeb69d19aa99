"""``ganymede grant NB KEY=PATH…``, ``--list [NB]``, ``--revoke NB [KEY=PATH…]``: what a
notebook's kernel may ask the server for.

Through the running server that serves the notebook, so the change applies to its kernels at
once; else on the grants store directly, with paths relative to the current directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Protocol

import typer

from ganymede.cli.output import EXIT_USAGE, fail, warn
from ganymede.cli.server_options import TokenOption, url_option

if TYPE_CHECKING:
    from ganymede.grant import Grant, NotebookGrant, NotebookGrants, Overview

UrlOption = url_option("Change grants through this server (its URL as `ganymede serve` prints it).")

COMMAND = "ganymede grant"
EXIT_FAILED = 1


class GrantBook(Protocol):
    """What the command needs of the grants, whether a server or the store keeps them."""

    def show(self, api_path: str) -> NotebookGrants: ...
    def overview(self) -> Overview: ...
    def put(self, api_path: str, own: NotebookGrant) -> NotebookGrants: ...
    def delete(self, api_path: str) -> NotebookGrants: ...


def command(
    arguments: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="NOTEBOOK [KEY=PATH]...",
            help="The notebook, then read=PATH, run=PATH or edit_self=true|false.",
            show_default=False,
        ),
    ] = None,
    list_: Annotated[
        bool,
        typer.Option("--list", help="Show the notebook's grant and wants (every notebook's)."),
    ] = False,
    revoke: Annotated[
        bool,
        typer.Option(
            "--revoke", help="Remove these paths (a bare KEY: that key; none: the whole grant)."
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the result as one JSON document.")
    ] = False,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Show, set and revoke what a notebook's kernel may ask the server for.

    A notebook's own read or run paths replace the defaults ([host] in ganymede.toml) for that
    key; keys it does not set follow the defaults. PATHs are relative to the served root.
    """
    from ganymede.errors import ConfigError, GanymedeError, NotebookNotFound, PathError, UsageError
    from ganymede.grant import granting, parse_change, revoking

    words = list(arguments or [])
    if list_ and revoke:
        fail("--list and --revoke do not go together", EXIT_USAGE, COMMAND)
    if list_ and len(words) > 1:
        fail("--list takes at most one NOTEBOOK and no KEY=PATH", EXIT_USAGE, COMMAND)
    if not list_ and not words:
        fail("missing NOTEBOOK (or --list)", EXIT_USAGE, COMMAND)
    if not list_ and not revoke and len(words) == 1:
        fail("missing KEY=PATH to grant (see --list to show grants)", EXIT_USAGE, COMMAND)
    notebook = Path(words[0]) if words else None
    try:
        changes = [parse_change(word, revoking=revoke) for word in words[1:]]
        book, api_path = _book(notebook, url, token)
        if notebook is None:
            _render_overview(book.overview(), as_json)
            return
        assert api_path is not None
        if list_:
            view = book.show(api_path)
        elif revoke and not changes:
            view = book.delete(api_path)
        else:
            own = book.show(api_path).own
            changed = revoking(own, changes) if revoke else granting(own, changes)
            view = book.put(api_path, changed)
    except (UsageError, ConfigError, PathError) as error:
        fail(str(error), EXIT_USAGE, COMMAND)
    except NotebookNotFound:
        fail(f"{notebook}: no such notebook", EXIT_FAILED, COMMAND)
    except GanymedeError as error:
        fail(str(error), EXIT_FAILED, COMMAND)
    _render(view, as_json)


def _book(
    notebook: Path | None, url: str | None, token: str | None
) -> tuple[GrantBook, str | None]:
    """Who keeps the grants for ``notebook`` (or for the current directory), and its API path."""
    from ganymede.client.discover import server_at, server_for
    from ganymede.errors import ServerUnreachable, UsageError
    from ganymede.grant.remote import RemoteGrants

    place = notebook if notebook is not None else Path.cwd()
    server = server_at(url, token) if url else server_for(place)
    if server is None:
        return _local_book(notebook)
    api_path = server.api_path(notebook) if notebook is not None else None
    if notebook is not None and api_path is None:
        raise UsageError(f"{notebook}: not under the root of the server at {server.url}")
    book = RemoteGrants(server)
    if not url:
        try:
            book.overview()
        except ServerUnreachable as error:
            warn(f"changing the grants store directly: the server does not answer ({error})")
            return _local_book(notebook)
    return book, api_path


def _local_book(notebook: Path | None) -> tuple[GrantBook, str | None]:
    """The grants store itself, for the root in the current directory."""
    from ganymede.config import load_config
    from ganymede.errors import UsageError
    from ganymede.fileid import FileIdStore
    from ganymede.grant import GrantAdmin, Grants

    root = Path.cwd().resolve()
    api_path = None
    if notebook is not None:
        try:
            api_path = "/".join(notebook.resolve().relative_to(root).parts)
        except ValueError:
            raise UsageError(
                f"{notebook}: not under the current directory; with no server running, run "
                "ganymede grant from the root you serve"
            ) from None
    grants = Grants.from_config(root, load_config(None, root), FileIdStore(root))
    return GrantAdmin(grants), api_path


def _render(view: NotebookGrants, as_json: bool) -> None:
    if as_json:
        print(json.dumps(view.to_json()))
        return
    own = view.own
    print(view.path)
    _render_key("read", _paths(view.effective.read), own.read is None)
    _render_key("run", _paths(view.effective.run), own.run is None)
    _render_key("edit_self", str(view.effective.edit_self).lower(), own.edit_self is None)
    if view.wants:
        print(f"  {'wants':<10} {', '.join(view.wants)}  (asked for, not granted)")


def _render_overview(overview: Overview, as_json: bool) -> None:
    if as_json:
        print(json.dumps(overview.to_json()))
        return
    _render_defaults(overview.defaults)
    for view in overview.notebooks:
        print()
        _render(view, as_json=False)


def _render_defaults(defaults: Grant) -> None:
    print("defaults")
    _render_key("read", _paths(defaults.read), False)
    _render_key("run", _paths(defaults.run), False)
    _render_key("edit_self", str(defaults.edit_self).lower(), False)


def _render_key(key: str, value: str, from_defaults: bool) -> None:
    print(f"  {key:<10} {value}{'  (default)' if from_defaults else ''}")


def _paths(paths: tuple[str, ...]) -> str:
    if not paths:
        return "nothing"
    return ", ".join(path if path else "the whole root" for path in paths)
