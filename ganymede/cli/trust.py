"""``ganymede trust NB… [--check] [--json]``: sign notebooks, or report whether they are trusted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ganymede.cli.output import fail

EXIT_UNTRUSTED = 1
EXIT_INVALID = 5


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
) -> None:
    """Sign notebooks so their outputs are trusted (compatible with `jupyter trust`)."""
    from ganymede.errors import InvalidNotebook, NotebookNotFound
    from ganymede.trust import check_files, sign_files

    try:
        reports = check_files(notebooks) if check else sign_files(notebooks)
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
