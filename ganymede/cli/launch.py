"""The ``ganymede`` entry point: ``execute`` is answered from the run cache before the CLI loads,
or run on its common options without typer's parse; see ``ganymede.cli.cached_rerun`` for why.
Everything else goes to ``ganymede.cli.main``.
"""

from __future__ import annotations

import sys


def run() -> None:
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
