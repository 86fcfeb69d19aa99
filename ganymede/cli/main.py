"""The ``ganymede`` entry point: the typer app, its subcommands, and where errors meet exit codes.

Subcommand modules import their heavy dependencies inside the command function, so
``ganymede --help`` and ``ganymede execute`` never import the server.
"""

from __future__ import annotations

import sys

import typer

from ganymede.cli import execute, grant, history, lab, mcp, serve, suggestions, trust
from ganymede.cli.output import EXIT_USAGE, fail
from ganymede.errors import GanymedeError

app = typer.Typer(
    name="ganymede",
    help="A Jupyter toolchain for notebooks that people, agents and programs work in at once.",
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.command(name="execute")(execute.command)
app.command(name="grant")(grant.command)
app.command(name="history")(history.command)
app.command(name="serve", context_settings=serve.CONTEXT_SETTINGS)(serve.command)
app.command(name="suggestions")(suggestions.command)
app.command(name="trust")(trust.command)
app.add_typer(lab.app, name="lab")
app.add_typer(mcp.app, name="mcp")


def run(argv: list[str] | None = None) -> None:
    """Run the CLI; usage errors become one line on stderr and exit 2, never a traceback."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["execute"]:
        from ganymede.cli.params import joined_assignments

        args = joined_assignments(args)  # papermill's ``-p NAME VALUE``, before click splits it
    try:
        # The raw arguments ride along: ``-p``/``-P`` order across options lives only there.
        code = app(
            args=args or ["--help"], prog_name="ganymede", standalone_mode=False, obj={"argv": args}
        )
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except typer.Abort:
        fail("aborted", 130)
    except typer.TyperException as error:  # click's usage errors, as typer vendors them
        context = getattr(error, "ctx", None)
        command = context.command_path if context is not None else "ganymede"
        fail(error.format_message(), getattr(error, "exit_code", EXIT_USAGE), command)
    except GanymedeError as error:
        fail(str(error), EXIT_USAGE)
    # Outside standalone mode click returns a command's exit code instead of exiting.
    if isinstance(code, int):
        sys.exit(code)
