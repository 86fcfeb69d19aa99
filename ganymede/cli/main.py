"""The ``ganymede`` entry point: the typer app, its subcommands, and where errors meet exit codes.

Subcommand modules import their heavy dependencies inside the command function, so
``ganymede --help`` and ``ganymede execute`` never import the server.
"""

from __future__ import annotations

import sys

import click
import typer

from ganymede.cli import execute, trust
from ganymede.cli.output import EXIT_USAGE, fail
from ganymede.errors import GanymedeError

app = typer.Typer(
    name="ganymede",
    help="A Jupyter toolchain for notebooks that people, agents and programs work in at once.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.command(name="execute", no_args_is_help=True)(execute.command)
app.command(name="trust", no_args_is_help=True)(trust.command)


def run(argv: list[str] | None = None) -> None:
    """Run the CLI; usage errors become one line on stderr and exit 2, never a traceback."""
    args = sys.argv[1:] if argv is None else argv
    try:
        # The raw arguments ride along: ``-p``/``-P`` order across options lives only there.
        app(args=args, prog_name="ganymede", standalone_mode=False, obj={"argv": args})
    except click.exceptions.NoArgsIsHelpError as help_shown:
        # click printed the help already; typer raises this for bare ``ganymede execute``.
        sys.exit(EXIT_USAGE if help_shown.ctx and help_shown.ctx.parent else 0)
    except click.UsageError as error:
        command = error.ctx.command_path if error.ctx else "ganymede"
        fail(error.format_message(), EXIT_USAGE, command)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.Abort:
        fail("aborted", 130)
    except GanymedeError as error:
        fail(str(error), EXIT_USAGE)
