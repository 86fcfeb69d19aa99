"""``ganymede history FILE [--at WHEN [-o OUT]] [--json]``: a file's recorded points, or the file
as it was at one of them, read from the history store (no server needed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from ganymede.cli.output import EXIT_USAGE, fail

EXIT_NO_HISTORY = 1
EXIT_NOT_FOUND = 5


def command(
    file: Annotated[
        Path,
        typer.Argument(metavar="FILE", help="A notebook or text file.", show_default=False),
    ],
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            metavar="WHEN",
            help="Write the file as it was at this point: its number in the list (3 or #3), "
            "or a time (2026-12-04T15:30, local unless it names its zone).",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        str,
        typer.Option("-o", "--output", metavar="OUT", help="Where --at writes; - is stdout."),
    ] = "-",
    as_json: Annotated[
        bool,
        typer.Option("--json", help="One JSON object per point: number, at, time, who, kind."),
    ] = False,
) -> None:
    """List the points in a file's history (who changed it, when, how), or with --at write the
    file as it was then."""
    from ganymede.errors import NotebookNotFound, UsageError
    from ganymede.history import HistoryStore
    from ganymede.history.files import (
        NoHistory,
        chosen_point,
        content_at,
        file_history,
        format_time,
        parse_when,
    )
    from ganymede.history.store import HistoryUnreadable

    try:
        store = HistoryStore(read_only=True)
    except HistoryUnreadable as error:
        fail(str(error), EXIT_NO_HISTORY, "ganymede history")
    try:
        history = file_history(file, store)
        if at is None:
            for number, point in enumerate(history.steps, start=1):
                when = format_time(point.at)
                if as_json:
                    line = {"number": number, "at": point.at, "time": when}
                    print(json.dumps(line | {"who": point.who, "kind": point.kind.value}))
                else:
                    print(f"#{number}\t{when}\t{point.kind.value}\t{point.who}")
            return
        point = chosen_point(history, parse_when(at))
        data = content_at(history, point, store)
    except NotebookNotFound as error:
        fail(str(error), EXIT_NOT_FOUND, "ganymede history")
    except (NoHistory, HistoryUnreadable) as error:
        fail(str(error), EXIT_NO_HISTORY, "ganymede history")
    except UsageError as error:
        fail(str(error), EXIT_USAGE, "ganymede history")
    finally:
        store.close()
    if output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        from ganymede.core.files import atomic_write

        try:
            atomic_write(Path(output), data)
        except OSError as error:
            fail(f"{output}: cannot write: {error}", EXIT_NO_HISTORY, "ganymede history")
