"""``ganymede execute`` answered from the run cache without loading the CLI's option parser.

A cached rerun does no more than hash a few files and write a notebook, so importing typer (and
the pydantic it brings) would be most of its cost. ``answer`` reads the command line itself for
the options that matter to a cached rerun and, when the cache answers every notebook, does what
the command would, through the same functions (``ganymede.cli.execute_outcomes``). Anything it
is not sure of (an option it does not know, ``--help``, stdin, a miss, a config or parameter
error) makes it step aside before printing anything, and the command runs as usual.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

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
    "-j": "jobs",  # what shapes only a run (jobs, timeouts, saving, the kernel's directory)
    "--jobs": "jobs",
    "--timeout": "number",
    "--startup-timeout": "number",
    "--autosave-every": "number",
    "--cwd": None,
}
FLAGS = {
    "--json": "as_json",
    "--allow-errors": "allow_errors",
    "--no-inject": "no_inject",
    "--no-save": "no_save",
    "--no-autosave": None,
    "--interrupt-on-timeout": None,
}


@dataclass
class CachedArgs:
    """The part of an ``execute`` command line a cached rerun needs."""

    notebooks: list[Path] = field(default_factory=list)
    cache: Path | None = None
    cache_input: list[str] = field(default_factory=list)
    output: str | None = None
    config: Path | None = None
    kernel: str | None = None
    params_file: list[Path] = field(default_factory=list)
    as_json: bool = False
    allow_errors: bool = False
    no_inject: bool = False
    no_save: bool = False


def parse(args: list[str]) -> CachedArgs | None:
    """The options after ``execute``; None for a command line this reader must not judge."""
    parsed = CachedArgs()
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        name, attached = token, None
        if token.startswith("--") and "=" in token:
            name, attached = token.split("=", 1)
        if name in FLAGS and attached is None:
            if FLAGS[name] is not None:
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
            return None  # stdin, --help, --no-cache, --prepare-only, anything new
        parsed.notebooks.append(Path(token))
    return parsed if parsed.notebooks else None


def _take(parsed: CachedArgs, slot: str | None, value: str) -> bool:
    if slot == "jobs":
        return value.isdigit() and int(value) >= 1
    if slot == "number":
        try:
            return float(value) > 0
        except ValueError:
            return False
    if slot in ("cache", "config"):
        setattr(parsed, slot, Path(value))
    elif slot == "params_file":
        parsed.params_file.append(Path(value))
    elif slot == "cache_input":
        parsed.cache_input.append(value)
    elif slot is not None:
        setattr(parsed, slot, value)
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
    if parsed is None or (parsed.output is not None and parsed.no_save):
        return None
    from ganymede.cli.execute_outcomes import (
        announce,
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
    directory = parsed.cache
    if directory is None and settings.cache is not None:
        base = loaded.source.parent if loaded.source is not None else Path.cwd()
        directory = base / settings.cache
    if directory is None or not directory.is_dir():
        return None
    from ganymede.execute.cache import RunCache, max_bytes

    check_usage(parsed.notebooks, parsed.output, parsed.no_save, parsed.as_json, 1, None, None)
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
