"""The part of ``ganymede execute`` that needs no option parser: reading the notebooks asked
for, answering them from the run cache, writing executed notebooks and reporting outcomes.

Kept apart from the typer command so a cached rerun (``ganymede.cli.cached_rerun``) can answer
without importing typer, whose start-up alone is most of what such a rerun may cost.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ganymede.cli.output import EXIT_USAGE, fail, wants_color, warn

if TYPE_CHECKING:
    from ganymede.config import Config
    from ganymede.execute import RunOutcome, RunRequest
    from ganymede.execute.cache import RunCache

COMMAND = "ganymede execute"
EXIT_CODES = {"ok": 0, "error": 1, "timeout": 3, "dead": 4, "invalid": 5}
STDIN = Path("-")


def cache_directory(explicit: Path | None, loaded: Config) -> Path | None:
    """The run cache's directory: ``--cache``, else ``[execute] cache`` (relative to its config
    file); None when neither names one."""
    if explicit is not None or loaded.execute.cache is None:
        return explicit
    base = loaded.source.parent if loaded.source is not None else Path.cwd()
    return base / loaded.execute.cache


def open_cache(explicit: Path | None, loaded: Config) -> RunCache | None:
    """The run cache in force, if any; a usage error when its path is not a directory."""
    from ganymede.execute.cache import RunCache, max_bytes

    directory = cache_directory(explicit, loaded)
    if directory is None:
        return None
    if directory.exists() and not directory.is_dir():
        fail(f"--cache {directory}: not a directory", EXIT_USAGE, COMMAND)
    return RunCache(directory, max_bytes(loaded.execute.cache_max_mb))


def look_up(
    run_cache: RunCache, requests: list[RunRequest], patterns: list[str], invalid: dict[Path, str]
) -> tuple[list[RunRequest], dict[Path, RunOutcome], dict[Path, str]]:
    """The requests still to run; the outcomes of those the cache answers (with the warnings
    about parameters a run would give); each one's key.

    A notebook whose declared inputs cannot be read is not run (``invalid``): its key, and so
    whether its outputs are still true, is unknown."""
    from ganymede.errors import UsageError
    from ganymede.execute import RunOutcome
    from ganymede.execute.cache import digest_inputs
    from ganymede.execute.cache_key import cache_key, declared_inputs, from_cache, injects
    from ganymede.execute.parameters_cell import parameter_warnings
    from ganymede.notebook.results import read_results

    to_run: list[RunRequest] = []
    hits: dict[Path, RunOutcome] = {}
    keys: dict[Path, str] = {}
    for request in requests:
        path, notebook = request.path, request.notebook
        base = Path.cwd() if path == STDIN else path.parent
        try:
            inputs = digest_inputs(patterns, Path.cwd())
            inputs += digest_inputs(declared_inputs(notebook), base)
            key = cache_key(
                notebook,
                params=request.params,
                kernel_name=request.kernel_name,
                inject=request.inject,
                allow_errors=request.allow_errors,
                inputs=inputs,
            )
        except UsageError as error:
            invalid[path] = f"{path}: {error}"
            continue
        except OSError as error:
            name = error.filename or error
            invalid[path] = f"{path}: cannot read input {name}: {error.strerror or error}"
            continue
        keys[path] = key
        cached = run_cache.load(key)
        merged = None
        if cached is not None:
            merged = from_cache(
                notebook,
                cached,
                params=request.params,
                kernel_name=request.kernel_name,
                inject=request.inject,
            )
        if merged is None:
            to_run.append(request)
            continue
        run = (merged["metadata"].get("ganymede") or {}).get("run") or {}
        warnings = []
        if injects(notebook, request.kernel_name, request.inject):
            warnings = [f"{path}: {w}" for w in parameter_warnings(notebook, request.params)]
        hits[path] = RunOutcome(
            request=request,
            status="ok",
            notebook=merged,
            results=read_results(merged.get("cells", [])),
            error=None,
            duration=float(run.get("duration") or 0.0),
            warnings=warnings,
        )
    return to_run, hits, keys


def announce(hits: dict[Path, RunOutcome], keys: dict[Path, str]) -> None:
    """A line on stderr for each notebook the cache answered, where a run would say it ran."""
    for path in hits:
        print(f"{path}: ok from the cache (key {keys[path][:12]})", file=sys.stderr)


def check_usage(
    notebooks: list[Path],
    output: str | None,
    no_save: bool,
    as_json: bool,
    jobs: int,
    timeout: float | None,
    startup_timeout: float | None,
) -> None:
    if jobs < 1:
        fail(f"-j/--jobs must be at least 1, got {jobs}", EXIT_USAGE, COMMAND)
    for flag, value in (("--timeout", timeout), ("--startup-timeout", startup_timeout)):
        if value is not None and value <= 0:
            fail(f"{flag} must be more than 0 seconds, got {value:g}", EXIT_USAGE, COMMAND)
    if output is not None and no_save:
        fail("--no-save and -o/--output exclude each other", EXIT_USAGE, COMMAND)
    if output == "-" and len(notebooks) > 1:
        fail("-o - writes one notebook to stdout; give one notebook", EXIT_USAGE, COMMAND)
    if output == "-" and as_json:
        fail("-o - and --json both write to stdout; choose one", EXIT_USAGE, COMMAND)
    if output not in (None, "-") and len(notebooks) > 1 and not Path(output).is_dir():
        fail(f"-o {output}: several notebooks need an existing directory", EXIT_USAGE, COMMAND)


def keep(run_cache: RunCache, outcomes: list[RunOutcome], keys: dict[Path, str]) -> None:
    """Keep the executed notebook of every run that finished ok; a cache that cannot be written
    costs a warning, never the run."""
    from ganymede.notebook.nbio import dumps_notebook

    for outcome in outcomes:
        key = keys.get(outcome.request.path)
        if key is None or outcome.status != "ok" or not outcome.ran:
            continue
        try:
            run_cache.store(key, dumps_notebook(outcome.notebook))
        except OSError as error:
            warn(
                f"{run_cache.directory}: cannot keep {outcome.request.path} in the cache: "
                f"{error.strerror or error}"
            )


def load_requests(
    notebooks: list[Path], **options: Any
) -> tuple[list[RunRequest], dict[Path, str]]:
    """A run request per readable notebook; the others with the reason they can't run."""
    from ganymede.errors import InvalidNotebook
    from ganymede.execute import RunRequest
    from ganymede.notebook.nbio import parse_notebook

    requests: list[RunRequest] = []
    invalid: dict[Path, str] = {}
    for path in notebooks:
        try:
            content = sys.stdin.buffer.read() if path == STDIN else path.read_bytes()
            notebook = parse_notebook(content, str(path))
        except OSError as error:
            invalid[path] = f"{path}: cannot read: {error.strerror or error}"
            continue
        except InvalidNotebook as error:
            invalid[path] = str(error)
            continue
        requests.append(RunRequest(path=path, notebook=notebook, **options))
    return requests, invalid


def report(
    notebooks: list[Path],
    outcomes: list[RunOutcome],
    invalid: dict[Path, str],
    *,
    output: str | None,
    no_save: bool,
    as_json: bool,
    prepared: bool,
    cached: set[Path],
) -> int:
    """Write notebooks, print results and errors; the exit code of the first failed notebook.
    ``cached`` names the notebooks whose outcome came from the run cache.

    A notebook is written when its cells ran, or when it was prepared to run; never when its
    kernel could not start, so the file keeps what it had."""
    by_path = {outcome.request.path: outcome for outcome in outcomes}
    lines: list[dict[str, Any]] = []
    code = 0
    for path in notebooks:
        if path in invalid:
            fail_line = invalid[path]
            print(f"{COMMAND}: error: {fail_line}", file=sys.stderr)
            lines.append(
                _json_line(path, "invalid", {}, {"message": fail_line}, 0.0, None, cached=False)
            )
            code = code or EXIT_CODES["invalid"]
            continue
        outcome = by_path[path]
        for message in outcome.warnings:
            warn(message)
        if outcome.status != "ok":
            _print_failure(outcome)
            code = code or EXIT_CODES[outcome.status]
        writable = outcome.ran or (prepared and outcome.status == "ok")
        written = _write_outcome(outcome, output) if writable and not no_save else None
        if written is None and writable and not no_save:
            code = code or EXIT_CODES["invalid"]
        lines.append(
            _json_line(
                path,
                outcome.status,
                outcome.results,
                outcome.error,
                outcome.duration,
                written,
                cached=path in cached,
            )
        )
    if as_json:
        for line in lines:
            print(json.dumps(line))
    elif output != "-":
        _print_results(lines)
    return code


def _json_line(
    path: Path,
    status: str,
    results: dict[str, Any],
    error: dict[str, Any] | None,
    duration: float,
    written: str | None,
    *,
    cached: bool,
) -> dict[str, Any]:
    if error is not None and error.get("traceback"):
        from ganymede.execute.ansi import strip_ansi

        error = {**error, "traceback": [strip_ansi(line) for line in error["traceback"]]}
    return {
        "path": str(path),
        "status": status,
        "results": results,
        "error": error,
        "duration": round(duration, 3),
        "output": written,
        "cached": cached,
    }


def _write_outcome(outcome: RunOutcome, output: str | None) -> str | None:
    """Write the executed notebook where asked; where it went (``-`` for stdout), None if it failed.

    A failed write (full disk, no permission) leaves the target as it was and says so in one line.
    A target that already holds these very bytes is left alone: a cached rerun in place (or to
    an unchanged ``-o``) rewrites and syncs nothing.
    """
    from ganymede.core.files import atomic_write
    from ganymede.notebook.nbio import dumps_notebook

    text = dumps_notebook(outcome.notebook)
    if output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return "-"
    destination = target(outcome.request.path, output)
    data = text.encode("utf-8")
    if _holds(destination, data):
        return str(destination)
    try:
        atomic_write(destination, data)
    except OSError as error:
        reason = error.strerror or error
        print(f"{COMMAND}: error: {destination}: cannot write: {reason}", file=sys.stderr)
        return None
    return str(destination)


def _holds(path: Path, data: bytes) -> bool:
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


def target(path: Path, output: str | None) -> Path:
    """Where the notebook read from ``path`` is written: in place, or ``-o``'s file or directory."""
    if output is None:
        return path
    written = Path(output)
    return written / path.name if written.is_dir() else written


def _print_failure(outcome: RunOutcome) -> None:
    """The failing cell's index, id and traceback (plain text unless stderr is a terminal)."""
    from ganymede.execute.failure import failure_headline

    error = outcome.error or {}
    headline = failure_headline(outcome)
    print(f"{COMMAND}: error: {headline}", file=sys.stderr)
    traceback = "\n".join(error.get("traceback") or [])
    if traceback:
        from ganymede.execute.ansi import strip_ansi

        print(traceback if wants_color(sys.stderr) else strip_ansi(traceback), file=sys.stderr)


def _print_results(lines: list[dict[str, Any]]) -> None:
    rows = [
        (line["path"], name, value) for line in lines for name, value in line["results"].items()
    ]
    if not rows:
        return
    if not sys.stdout.isatty():
        for path, name, value in rows:
            print(f"{path}\t{name}\t{json.dumps(value)}")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("notebook", "result", "value")
    for path, name, value in rows:
        text = json.dumps(value)
        table.add_row(path, name, text if len(text) <= 80 else text[:79] + "…")
    Console().print(table)
