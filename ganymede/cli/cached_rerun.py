"""``ganymede execute``'s common command lines read without typer, and cached reruns answered.

typer takes a tenth of a second to import and, at parse time, imports pydantic for a fifth more:
most of what a cached rerun may cost, and a fifth of a short run's. ``parse`` reads the options
that CI command lines use into what typer would hand the command; anything else (an option it
does not know, ``--help``, stdin, short options run together) gives None, and typer parses as
usual. ``answer`` then does what the command would when the run cache answers every notebook,
through the same functions (``ganymede.cli.execute_outcomes``), without importing typer at all;
when it cannot (a miss, a config or parameter error), it steps aside having printed nothing, and
``ganymede.cli.execute.run_parsed`` calls the command with what ``parse`` read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VALUE_OPTIONS = {
    "--cache": "cache",
    "--cache-input": "cache_input",
    "-o": "output",
    "--output": "output",
    "--config": "config",
    "-k": "kernel",
    "--kernel": "kernel",
    "-f": "params_file",
    "--params-file": "params_file",
    "-p": None,  # parameter flags are read from the whole command line by flags_in_order
    "--param": None,
    "-P": None,
    "-r": None,
    "--param-string": None,
    "-y": None,
    "--params-yaml": None,
    "-b": None,
    "--params-base64": None,
    "-j": "jobs",
    "--jobs": "jobs",
    "--timeout": "timeout",
    "--startup-timeout": "startup_timeout",
    "--autosave-every": "autosave_every",
    "--cwd": "cwd",
}
FLAGS = {
    "--json": "as_json",
    "--allow-errors": "allow_errors",
    "--no-inject": "no_inject",
    "--no-save": "no_save",
    "--no-autosave": "no_autosave",
    "--interrupt-on-timeout": "interrupt_on_timeout",
    "--no-cache": "no_cache",
}
CONVERTERS: dict[str, Callable[[str], Any]] = {
    "cache": Path,
    "config": Path,
    "cwd": Path,
    "jobs": int,
    "timeout": float,
    "startup_timeout": float,
    "autosave_every": float,
}


@dataclass
class ExecuteArgs:
    """An ``execute`` command line of the common options, read without typer; the values as
    typer hands them to the command (its checks of ranges are the command's own)."""

    notebooks: list[Path] = field(default_factory=list)
    cache: Path | None = None
    cache_input: list[str] = field(default_factory=list)
    output: str | None = None
    config: Path | None = None
    kernel: str | None = None
    params_file: list[Path] = field(default_factory=list)
    jobs: int = 1
    timeout: float | None = None
    startup_timeout: float | None = None
    autosave_every: float | None = None
    cwd: Path | None = None
    as_json: bool = False
    allow_errors: bool = False
    no_inject: bool = False
    no_save: bool = False
    no_autosave: bool = False
    interrupt_on_timeout: bool = False
    no_cache: bool = False


def parse(args: list[str]) -> ExecuteArgs | None:
    """The options after ``execute``; None for a command line this reader must not judge."""
    parsed = ExecuteArgs()
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        name, attached = token, None
        if token.startswith("--") and "=" in token:
            name, attached = token.split("=", 1)
        if name in FLAGS and attached is None:
            setattr(parsed, FLAGS[name], True)
            continue
        if name in VALUE_OPTIONS:
            if attached is None:
                if index >= len(args):
                    return None
                attached = args[index]
                index += 1
            if not _take(parsed, VALUE_OPTIONS[name], attached):
                return None
            continue
        if token.startswith("-") or not token:
            return None  # stdin, --help, --prepare-only, short options run together, anything new
        parsed.notebooks.append(Path(token))
    return parsed if parsed.notebooks else None


def _take(parsed: ExecuteArgs, slot: str | None, value: str) -> bool:
    """Store ``value``; False when typer would refuse it (typer then says why)."""
    if slot is None:
        return True
    if slot in ("params_file", "cache_input"):
        getattr(parsed, slot).append(Path(value) if slot == "params_file" else value)
        return True
    try:
        setattr(parsed, slot, CONVERTERS.get(slot, str)(value))
    except ValueError:
        return False
    return True


def answer(argv: list[str]) -> int | None:
    """The exit code of ``ganymede ARGV`` when it is ``execute`` and the run cache answers every
    notebook it names (the notebooks written and reported as the command would); None, having
    printed and written nothing, when the command must run."""
    if argv[:1] != ["execute"]:
        return None
    from ganymede.cli.params import joined_assignments

    argv = joined_assignments(argv)
    parsed = parse(argv[1:])
    if parsed is None or parsed.no_cache or (parsed.output is not None and parsed.no_save):
        return None
    if (parsed.autosave_every or 0) < 0 or (parsed.cwd is not None and not parsed.cwd.is_dir()):
        return None  # usage errors: the command says them
    from ganymede.cli.execute_outcomes import (
        announce,
        cache_directory,
        check_usage,
        load_requests,
        look_up,
        report,
    )
    from ganymede.cli.params import build_params, flags_in_order
    from ganymede.config import load_config
    from ganymede.errors import GanymedeError

    try:
        loaded = load_config(parsed.config, Path.cwd())
        params = build_params(parsed.params_file, flags_in_order(argv))
    except GanymedeError:
        return None
    settings = loaded.execute
    directory = cache_directory(parsed.cache, loaded)
    if directory is None or not directory.is_dir():
        return None
    from ganymede.execute.cache import RunCache, max_bytes

    check_usage(
        parsed.notebooks,
        parsed.output,
        parsed.no_save,
        parsed.as_json,
        parsed.jobs,
        parsed.timeout,
        parsed.startup_timeout,
    )
    requests, invalid = load_requests(
        parsed.notebooks,
        params=params,
        kernel_name=parsed.kernel or settings.kernel,
        allow_errors=parsed.allow_errors,
        inject=not parsed.no_inject,
    )
    if invalid:
        return None
    run_cache = RunCache(directory, max_bytes(settings.cache_max_mb))
    to_run, hits, keys = look_up(run_cache, requests, parsed.cache_input, invalid)
    if to_run or invalid:
        return None
    announce(hits, keys)
    return report(
        parsed.notebooks,
        list(hits.values()),
        {},
        output=parsed.output,
        no_save=parsed.no_save,
        as_json=parsed.as_json,
        prepared=False,
        cached=set(hits),
    )
