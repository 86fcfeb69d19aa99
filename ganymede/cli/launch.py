"""The ``ganymede`` entry point: ``execute`` is answered from the run cache before the CLI loads,
or run on its common options without typer's parse; see ``ganymede.cli.cached_rerun`` for why.
Everything else goes to ``ganymede.cli.main``.
"""

from __future__ import annotations

import sys


def skip_the_iri_grammar() -> None:
    """Mark rfc3987-syntax absent in this process, before anything imports jsonschema.

    jsonschema (which jupyter_server's events and nbformat load) adds an "iri" format checker
    when rfc3987-syntax is installed, and importing that builds an Earley parser for the RFC's
    grammar: 0.8 s of CPU at every start of ``serve`` and ``mcp``, over a third of a server's
    start. No schema these commands validate uses the format, and jsonschema imports the module
    under ``suppress(ImportError)``, so it leaves out that one checker. Only ``ganymede``'s own
    processes do this; kernels, where users' code runs, keep it.
    """
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[assignment]


def run() -> None:
    skip_the_iri_grammar()
    args = sys.argv[1:]
    if args[:1] == ["execute"]:
        from ganymede.cli.cached_rerun import answer

        code = answer(args)
        if code is None:
            from ganymede.cli.execute import run_parsed

            code = run_parsed(args)
        if code is not None:
            sys.exit(code)
    from ganymede.cli.main import run as run_cli

    run_cli(args)
