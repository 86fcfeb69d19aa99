"""``ganymede trust NB… [--check] [--json] [--url URL --token T]``: sign notebooks, or report
whether they are trusted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ganymede.cli.output import fail, warn
from ganymede.cli.server_options import TokenOption, url_option

if TYPE_CHECKING:
    from ganymede.client.discover import ServerInfo
    from ganymede.trust import TrustReport

UrlOption = url_option(
    "Sign through this server (its URL as `ganymede serve` prints it), never on file."
)

EXIT_UNTRUSTED = 1
EXIT_INVALID = 5
EXIT_SERVER = 6


def command(
    notebooks: Annotated[
        list[Path],
        typer.Argument(metavar="NOTEBOOK", help="Notebooks to sign or check.", show_default=False),
    ],
    check: Annotated[
        bool, typer.Option("--check", help="Only report; exit 1 if any notebook is untrusted.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per notebook: path, trusted, signed.")
    ] = False,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Sign notebooks so their outputs are trusted (compatible with `jupyter trust`).

    A notebook that a running server serves is trusted through that server, so a room open on
    it keeps it trusted.
    """
    from ganymede.errors import InvalidNotebook, NotebookNotFound
    from ganymede.trust import check_files

    try:
        if check:
            reports = check_files(notebooks)
        elif url:
            from ganymede.client.discover import server_at

            reports = _sign_through(server_at(url, token), notebooks)
        else:
            reports = _sign(notebooks)
    except (InvalidNotebook, NotebookNotFound) as error:
        fail(str(error), EXIT_INVALID, "ganymede trust")
    for report in reports:
        if as_json:
            line = {"path": report.path, "trusted": report.trusted, "signed": report.signed_now}
            print(json.dumps(line))
        elif check:
            print(f"{report.path}: {'trusted' if report.trusted else 'untrusted'}")
        else:
            print(f"{report.path}: {'signed' if report.signed_now else 'already signed'}")
    if check and not all(report.trusted for report in reports):
        raise typer.Exit(EXIT_UNTRUSTED)


def _sign(notebooks: list[Path]) -> list[TrustReport]:
    """Through the server serving each notebook, else on the file; reports in the given order."""
    from ganymede.client.discover import server_for
    from ganymede.errors import ServerRefused, ServerUnreachable
    from ganymede.trust import sign_files
    from ganymede.trust.remote import trust_through_server

    by_server: dict[int, TrustReport] = {}
    for index, notebook in enumerate(notebooks):
        server = server_for(notebook)
        if server is None:
            continue
        try:
            by_server[index] = trust_through_server(server, notebook, str(notebook))
        except ServerUnreachable as error:
            warn(f"signing {notebook} on file: the server serving it does not answer ({error})")
        except ServerRefused as error:
            fail(f"{notebook}: the server refused: {error}", EXIT_SERVER, "ganymede trust")
    on_file = iter(sign_files([nb for i, nb in enumerate(notebooks) if i not in by_server]))
    return [by_server[i] if i in by_server else next(on_file) for i in range(len(notebooks))]


def _sign_through(server: ServerInfo, notebooks: list[Path]) -> list[TrustReport]:
    """Every notebook through the one server named; one it cannot sign ends the command, since
    signing the file instead is not what was asked."""
    from ganymede.errors import ServerRefused, ServerUnreachable
    from ganymede.trust.remote import trust_through_server

    reports = []
    for notebook in notebooks:
        try:
            reports.append(trust_through_server(server, notebook, str(notebook)))
        except ServerUnreachable as error:
            fail(f"{notebook}: the server does not answer: {error}", EXIT_SERVER, "ganymede trust")
        except ServerRefused as error:
            fail(f"{notebook}: the server refused: {error}", EXIT_SERVER, "ganymede trust")
    return reports
