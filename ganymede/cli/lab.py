"""``ganymede lab extension install|list|uninstall``: prebuilt JupyterLab extensions, via pip."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from ganymede.cli.output import fail, warn

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ganymede.lab import LabExtension

COMMAND = "ganymede lab extension"
EXIT_PACKAGE = 1

app = typer.Typer(name="lab", add_completion=False, rich_markup_mode=None)
extension = typer.Typer(rich_markup_mode=None)
app.add_typer(extension, name="extension")


def _help_without_subcommand(context: typer.Context) -> None:
    """A group named alone shows its help and succeeds, as ``ganymede`` alone does."""
    if context.invoked_subcommand is None:
        typer.echo(context.get_help())
        raise typer.Exit(0)


@app.callback(invoke_without_command=True)
def lab_group(context: typer.Context) -> None:
    """The JupyterLab that `ganymede serve` serves."""
    _help_without_subcommand(context)


@extension.callback(invoke_without_command=True)
def extension_group(context: typer.Context) -> None:
    """Install, list and uninstall prebuilt JupyterLab extensions (pip distributions)."""
    _help_without_subcommand(context)


JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
VerboseOption = Annotated[
    bool, typer.Option("--verbose", "-v", help="Show pip's own output on stderr.")
]


@extension.command("install")
def install_command(
    names: Annotated[
        list[str],
        typer.Argument(
            metavar="NAME",
            help="Distributions to install: names, requirements (NAME==1.2), wheel files.",
            show_default=False,
        ),
    ],
    index_url: Annotated[
        str | None, typer.Option("--index-url", metavar="URL", help="Package index for pip.")
    ] = None,
    find_links: Annotated[
        list[str] | None,
        typer.Option("--find-links", metavar="DIR", help="Also look for packages here."),
    ] = None,
    no_index: Annotated[
        bool, typer.Option("--no-index", help="Do not use a package index.")
    ] = False,
    upgrade: Annotated[
        bool, typer.Option("--upgrade", "-U", help="Upgrade to the newest version.")
    ] = False,
    verbose: VerboseOption = False,
    as_json: JsonOption = False,
) -> None:
    """pip-install distributions that carry prebuilt lab extensions; report where each landed."""
    from ganymede.errors import PackageError
    from ganymede.lab import install

    _progress(f"pip install {' '.join(names)}", verbose)
    try:
        reports = install(
            names,
            index_url=index_url,
            find_links=find_links or (),
            no_index=no_index,
            upgrade=upgrade,
            on_output=sys.stderr.write if verbose else None,
        )
    except PackageError as error:
        fail(str(error), EXIT_PACKAGE, f"{COMMAND} install")
    for report in reports:
        if report.requested and not report.extensions:
            warn(f"{report.distribution} {report.version} installs no lab extension")
    if as_json:
        print(json.dumps({"installed": [report.to_json() for report in reports]}, indent=2))
        return
    for report in reports:
        if not report.requested:
            state = "installed (dependency)"
        else:
            state = "installed" if report.newly_installed else "already installed"
        print(f"{state} {report.distribution} {report.version}")
        _print_extensions(report.extensions, indent="  ")


@extension.command("list")
def list_command(as_json: JsonOption = False) -> None:
    """List the prebuilt lab extensions JupyterLab would load from this environment."""
    from ganymede.lab import installed_extensions

    extensions = installed_extensions()
    if as_json:
        print(json.dumps({"extensions": [item.to_json() for item in extensions]}, indent=2))
    elif extensions:
        _print_extensions(extensions, indent="", owners=True)
    else:
        print("ganymede: no prebuilt lab extensions found", file=sys.stderr)


@extension.command("uninstall")
def uninstall_command(
    names: Annotated[
        list[str],
        typer.Argument(metavar="NAME", help="Distributions to uninstall.", show_default=False),
    ],
    verbose: VerboseOption = False,
    as_json: JsonOption = False,
) -> None:
    """pip-uninstall distributions; report the lab extensions that went away."""
    from ganymede.errors import PackageError
    from ganymede.lab import uninstall

    _progress(f"pip uninstall {' '.join(names)}", verbose)
    try:
        reports = uninstall(names, on_output=sys.stderr.write if verbose else None)
    except PackageError as error:
        fail(str(error), EXIT_PACKAGE, f"{COMMAND} uninstall")
    for report in reports:
        if not report.extensions:
            warn(f"{report.distribution} {report.version} took no lab extension with it")
    if as_json:
        print(json.dumps({"uninstalled": [report.to_json() for report in reports]}, indent=2))
        return
    for report in reports:
        print(f"uninstalled {report.distribution} {report.version}")
        _print_extensions(report.extensions, indent="  ")


def _progress(message: str, verbose: bool) -> None:
    """One line so a slow download does not look like a hang; pip's own output replaces it."""
    if not verbose:
        print(f"ganymede: {message}", file=sys.stderr)


def _print_extensions(
    extensions: Sequence[LabExtension], indent: str, owners: bool = False
) -> None:
    """Aligned columns: name, version, [owning distribution,] directory."""
    rows = [
        [item.name, item.version, *([item.distribution or "-"] if owners else []), str(item.path)]
        for item in extensions
    ]
    if not rows:
        return
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)]
        print(indent + "  ".join([*cells, row[-1]]))
