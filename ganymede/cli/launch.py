"""The ``ganymede`` entry point: a cached ``execute`` rerun is answered before the CLI loads.

Everything else goes to ``ganymede.cli.main``; see ``ganymede.cli.cached_rerun`` for why.
"""

from __future__ import annotations

import sys


def run() -> None:
    args = sys.argv[1:]
    if args[:1] == ["execute"]:
        from ganymede.cli.cached_rerun import answer

        code = answer(args)
        if code is not None:
            sys.exit(code)
    from ganymede.cli.main import run as run_cli

    run_cli(args)
