"""``--url`` and ``--token``: how the commands that act through a running server name one.

Without them, a command finds the server serving the notebook (or the current directory) by
jupyter_server's runtime files; each command says in its ``--url`` help what it does there.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer


def url_option(help: str) -> Any:
    """The ``--url`` option (also ``GANYMEDE_URL``), with the command's own help."""
    return Annotated[
        str | None,
        typer.Option("--url", envvar="GANYMEDE_URL", metavar="URL", help=help, show_default=False),
    ]


TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="GANYMEDE_TOKEN",
        metavar="TOKEN",
        help="The token of the --url server (default: the URL's, else its runtime file's).",
        show_default=False,
    ),
]
