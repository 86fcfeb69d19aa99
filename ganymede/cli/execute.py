"""``ganymede execute NB…``: run notebooks headlessly with parameters in and named results out."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ganymede.cli.output import EXIT_USAGE, fail, wants_color, warn

if TYPE_CHECKING:
    from ganymede.cli.output_log import LinePrefixer
    from ganymede.config import Config, HostConfig
    from ganymede.execute import RunEvent, RunOutcome, RunRequest
    from ganymede.execute.autosave import Autosave
    from ganymede.execute.cache import RunCache
    from ganymede.execute.model import NotebookSave
    from ganymede.grant import Grant

COMMAND = "ganymede execute"
EXIT_CODES = {"ok": 0, "error": 1, "timeout": 3, "dead": 4, "invalid": 5}
AUTOSAVE_EVERY = 10.0
STDIN = Path("-")


def command(
    ctx: typer.Context,
    notebooks: Annotated[
        list[Path],
        typer.Argument(
            metavar="NOTEBOOK",
            help="Notebooks to run (- reads one from stdin).",
            show_default=False,
        ),
    ],
    param: Annotated[
        list[str] | None,
        typer.Option(
            "-p",
            "--param",
            metavar="NAME=VALUE",
            help="A parameter (also NAME VALUE); VALUE typed: True/False/None, JSON, a number, "
            "else a string.",
        ),
    ] = None,
    param_string: Annotated[
        list[str] | None,
        typer.Option(
            "-P",
            "-r",
            "--param-string",
            metavar="NAME=STRING",
            help="A parameter kept as a string (also NAME STRING).",
        ),
    ] = None,
    params_yaml: Annotated[
        list[str] | None,
        typer.Option("-y", "--params-yaml", metavar="YAML", help="Parameters as YAML text."),
    ] = None,
    params_base64: Annotated[
        list[str] | None,
        typer.Option(
            "-b", "--params-base64", metavar="BASE64", help="Parameters as base64-encoded YAML."
        ),
    ] = None,
    params_file: Annotated[
        list[Path] | None,
        typer.Option(
            "-f",
            "--params-file",
            metavar="FILE",
            help="Parameters from a .json, .toml, .yaml or .yml file (applied first).",
        ),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option(
            "-o",
            "--output",
            metavar="PATH",
            help="Write the run notebook to PATH (a directory for several), or - for stdout.",
        ),
    ] = None,
    no_save: Annotated[
        bool, typer.Option("--no-save", help="Write no notebook; only report.")
    ] = False,
    no_autosave: Annotated[
        bool,
        typer.Option(
            "--no-autosave", help="Write the notebook only at the end, not after each cell."
        ),
    ] = False,
    autosave_every: Annotated[
        float,
        typer.Option(
            "--autosave-every",
            metavar="S",
            help="While a cell prints, save at most every S seconds (0: only after each cell).",
        ),
    ] = AUTOSAVE_EVERY,
    kernel: Annotated[
        str | None,
        typer.Option(
            "-k", "--kernel", metavar="NAME", help="Kernel to use instead of the notebook's."
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", metavar="S", help="Seconds a cell may run (default: no limit)."),
    ] = None,
    interrupt_on_timeout: Annotated[
        bool,
        typer.Option(
            "--interrupt-on-timeout",
            help="Interrupt a cell past --timeout: it fails with KeyboardInterrupt "
            "(with --allow-errors the run goes on).",
        ),
    ] = False,
    startup_timeout: Annotated[
        float | None,
        typer.Option(
            "--startup-timeout", metavar="S", help="Seconds a kernel may take to start [60]."
        ),
    ] = None,
    cwd: Annotated[
        Path | None,
        typer.Option(
            "--cwd", metavar="DIR", help="The kernel's working directory (default: the notebook's)."
        ),
    ] = None,
    jobs: Annotated[
        int, typer.Option("-j", "--jobs", metavar="N", help="Notebooks run at once.")
    ] = 1,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per notebook on stdout.")
    ] = False,
    allow_errors: Annotated[
        bool, typer.Option("--allow-errors", help="Run every cell even after one raises.")
    ] = False,
    no_inject: Annotated[
        bool, typer.Option("--no-inject", help="Don't add an injected-parameters cell.")
    ] = False,
    prepare_only: Annotated[
        bool,
        typer.Option("--prepare-only", help="Inject the parameters and write; run nothing."),
    ] = False,
    log_output: Annotated[
        bool,
        typer.Option("--log-output", help="Stream the cells' outputs to stderr as they arrive."),
    ] = False,
    cache: Annotated[
        Path | None,
        typer.Option(
            "--cache",
            metavar="DIR",
            help="Reuse the outputs of a successful run of the same code, parameters, kernel and "
            "inputs, kept in DIR; run and keep them otherwise.",
        ),
    ] = None,
    cache_input: Annotated[
        list[str] | None,
        typer.Option(
            "--cache-input",
            metavar="GLOB",
            help="Files the notebooks read, whose contents are part of the cache key.",
        ),
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Ignore [execute] cache: run every notebook.")
    ] = False,
    config: Annotated[
        Path | None,
        typer.Option("--config", metavar="PATH", help="Config file (default: ./ganymede.toml)."),
    ] = None,
    grant: Annotated[
        list[str] | None,
        typer.Option(
            "--grant",
            metavar="KEY=PATH",
            help="What the kernels may ask for (read=PATH, run=PATH), in place of [host]'s key.",
        ),
    ] = None,
) -> None:
    """Run notebooks headlessly: parameters in, named results out, the notebook written back.

    Exit codes: 0 ok, 1 a cell raised, 2 usage, 3 timeout, 4 kernel died or could not start,
    5 notebook invalid.
    """
    from ganymede.cli.params import build_params, flags_in_order
    from ganymede.config import load_config
    from ganymede.errors import GanymedeError

    argv = (ctx.obj or {}).get("argv", sys.argv[1:])
    _check_usage(notebooks, output, no_save, as_json, jobs, timeout, startup_timeout)
    output = _output_for_stdin(notebooks, output, no_save, as_json)
    if autosave_every < 0:
        fail(
            f"--autosave-every must be 0 or more seconds, got {autosave_every:g}",
            EXIT_USAGE,
            COMMAND,
        )
    try:
        loaded = load_config(config, Path.cwd())
        settings = loaded.execute
        params = build_params(params_file or [], flags_in_order(argv))
        host_defaults = _host_defaults(loaded.host, grant or [])
    except GanymedeError as error:
        fail(str(error), EXIT_USAGE, COMMAND)
    if cwd is not None and not cwd.is_dir():
        fail(f"--cwd {cwd}: not a directory", EXIT_USAGE, COMMAND)

    requests, invalid = _load_requests(
        notebooks,
        params=params,
        kernel_name=kernel or settings.kernel,
        timeout=timeout if timeout is not None else settings.timeout,
        interrupt_on_timeout=interrupt_on_timeout,
        startup_timeout=startup_timeout
        if startup_timeout is not None
        else settings.startup_timeout,
        cwd=cwd,
        allow_errors=allow_errors,
        inject=not no_inject,
    )
    run_cache = None if no_cache or prepare_only else _open_cache(cache, loaded)
    hits: dict[Path, RunOutcome] = {}
    keys: dict[Path, str] = {}
    if run_cache is not None:
        requests, hits, keys = _look_up(run_cache, requests, cache_input or [], invalid)
    if prepare_only:
        from ganymede.execute import prepare_notebooks

        outcomes = prepare_notebooks(requests)
    else:
        outcomes = (
            _run(
                requests,
                jobs=jobs,
                host_defaults=host_defaults,
                output=output,
                autosaving=not (no_save or no_autosave or output == "-"),
                autosave_every=autosave_every,
                log_output=log_output,
            )
            if requests
            else []
        )
    if run_cache is not None:
        _keep(run_cache, outcomes, keys)
    code = _report(
        notebooks,
        [*outcomes, *hits.values()],
        invalid,
        output=output,
        no_save=no_save,
        as_json=as_json,
        prepared=prepare_only,
        cached=set(hits),
    )
    raise typer.Exit(code)


def _open_cache(directory: Path | None, loaded: Config) -> RunCache | None:
    """The run cache ``--cache`` names, else ``[execute] cache`` (relative to its config file)."""
    from ganymede.execute.cache import RunCache, max_bytes

    settings = loaded.execute
    if directory is None and settings.cache is not None:
        base = loaded.source.parent if loaded.source is not None else Path.cwd()
        directory = base / settings.cache
    if directory is None:
        return None
    if directory.exists() and not directory.is_dir():
        fail(f"--cache {directory}: not a directory", EXIT_USAGE, COMMAND)
    return RunCache(directory, max_bytes(settings.cache_max_mb))


def _look_up(
    run_cache: RunCache, requests: list[RunRequest], patterns: list[str], invalid: dict[Path, str]
) -> tuple[list[RunRequest], dict[Path, RunOutcome], dict[Path, str]]:
    """The requests still to run; the outcomes of those the cache answers; each one's key.

    A notebook whose declared inputs cannot be read is not run (``invalid``): its key, and so
    whether its outputs are still true, is unknown."""
    from ganymede.errors import UsageError
    from ganymede.execute import RunOutcome
    from ganymede.execute.cache import digest_inputs
    from ganymede.execute.cache_key import cache_key, declared_inputs, from_cache
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
        hits[path] = RunOutcome(
            request=request,
            status="ok",
            notebook=merged,
            results=read_results(merged.get("cells", [])),
            error=None,
            duration=float(run.get("duration") or 0.0),
        )
        print(f"{path}: ok from the cache (key {key[:12]})", file=sys.stderr)
    return to_run, hits, keys


def _keep(run_cache: RunCache, outcomes: list[RunOutcome], keys: dict[Path, str]) -> None:
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


def _run(
    requests: list[RunRequest],
    *,
    jobs: int,
    host_defaults: Grant,
    output: str | None,
    autosaving: bool,
    autosave_every: float,
    log_output: bool,
) -> list[RunOutcome]:
    """Run the requests, answering their host calls and saving each notebook as it runs."""
    import asyncio

    from ganymede.execute import run_notebooks
    from ganymede.execute.host_runs import ExecuteHost

    host = ExecuteHost(Path.cwd(), host_defaults)
    autosaves: list[Autosave] = []
    for request in requests:
        request.host = host.attach_for(request.path)
        if autosaving:
            request.autosave = _autosave(request, output, autosaves)
            request.autosave_every = autosave_every or None
    progress = _Progress(len(requests), log_output=log_output)

    async def run_all() -> list[RunOutcome]:
        try:
            return await run_notebooks(requests, jobs=jobs, on_event=progress.event)
        finally:  # the final writes must not race a save still under way
            await asyncio.gather(*(saver.aclose() for saver in autosaves))

    try:
        with progress:
            outcomes = asyncio.run(run_all())
    finally:
        host.close()
    for saver in autosaves:
        if saver.failure is not None:
            failure = saver.failure
            warn(f"{saver.target}: could not save while running: {failure.strerror or failure}")
    return outcomes


def _output_for_stdin(
    notebooks: list[Path], output: str | None, no_save: bool, as_json: bool
) -> str | None:
    """``-o`` as given, or ``-`` when the notebook comes from stdin (it has no file to go back
    to, so it goes to stdout, as papermill's does)."""
    if STDIN not in notebooks:
        return output
    if len(notebooks) > 1:
        fail("input - reads one notebook from stdin; give it alone", EXIT_USAGE, COMMAND)
    if output is not None and output != "-" and Path(output).is_dir():
        fail(f"input - has no name to write into -o {output}: give a file", EXIT_USAGE, COMMAND)
    if output is None and not no_save:
        if as_json:
            fail(
                "input - goes to stdout, as --json does: give -o PATH or --no-save",
                EXIT_USAGE,
                COMMAND,
            )
        return "-"
    return output


def _autosave(request: RunRequest, output: str | None, autosaves: list[Autosave]) -> NotebookSave:
    """The request's autosave, to where its notebook will be written; kept in ``autosaves``."""
    from ganymede.execute.autosave import Autosave

    autosave = Autosave(_target(request.path, output))
    autosaves.append(autosave)
    return autosave.save


def _check_usage(
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


def _host_defaults(config: HostConfig, grants: list[str]) -> Grant:
    """``[host]`` with each key a ``--grant`` names replaced by the paths given for it."""
    from ganymede.errors import UsageError
    from ganymede.grant import NotebookGrant, grant_from_config
    from ganymede.grant.changes import granting, parse_change

    changes = [parse_change(text) for text in grants]
    if any(change.key == "edit_self" for change in changes):
        raise UsageError("--grant edit_self: executed notebooks make no self.* calls")
    configured = grant_from_config(config.read, config.run, config.edit_self)
    return granting(NotebookGrant(), changes).over(configured)


def _load_requests(
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


def _report(
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
        written = _write(outcome, output) if writable and not no_save else None
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


def _write(outcome: RunOutcome, output: str | None) -> str | None:
    """Write the executed notebook where asked; where it went (``-`` for stdout), None if it failed.

    A failed write (full disk, no permission) leaves the target as it was and says so in one line.
    """
    from ganymede.core.files import atomic_write
    from ganymede.notebook.nbio import dumps_notebook

    text = dumps_notebook(outcome.notebook)
    if output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return "-"
    target = _target(outcome.request.path, output)
    try:
        atomic_write(target, text.encode("utf-8"))
    except OSError as error:
        print(
            f"{COMMAND}: error: {target}: cannot write: {error.strerror or error}", file=sys.stderr
        )
        return None
    return str(target)


def _target(path: Path, output: str | None) -> Path:
    """Where the notebook read from ``path`` is written: in place, or ``-o``'s file or directory."""
    if output is None:
        return path
    target = Path(output)
    return target / path.name if target.is_dir() else target


def _print_failure(outcome: RunOutcome) -> None:
    """The failing cell's index, id and traceback (plain text unless stderr is a terminal)."""
    error = outcome.error or {}
    path = outcome.request.path
    if "cell_index" in error:
        where = f"cell {error['cell_index']} (id {error.get('cell_id') or '-'})"
        if outcome.status == "error":
            headline = f"{path}: {where} raised {error.get('ename')}: {error.get('evalue')}"
        else:
            headline = f"{path}: {where}: {error.get('message') or outcome.status}"
    else:
        headline = f"{path}: {error.get('message') or outcome.status}"
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


class _Progress:
    """A bar per notebook on a terminal; plain lines on stderr otherwise."""

    def __init__(self, total: int, *, log_output: bool = False) -> None:
        self.total = total
        self.done = 0
        self.bar: Any = None
        self.tasks: dict[Path, Any] = {}
        self.log: LinePrefixer | None = None
        if log_output:
            from ganymede.cli.output_log import LinePrefixer

            self.log = LinePrefixer()

    def __enter__(self) -> _Progress:
        if sys.stderr.isatty() and self.total:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def event(self, event: RunEvent) -> None:
        path = event.request.path
        if self.log is not None:
            self._log(event)
        if self.bar is not None:
            if event.kind == "started":
                self.tasks[path] = self.bar.add_task(str(path), total=event.cell_count)
            elif event.kind == "cell" and path in self.tasks:
                self.bar.update(self.tasks[path], completed=event.cell_index + 1)
            elif event.kind == "finished" and path in self.tasks:
                self.bar.remove_task(self.tasks.pop(path))
            return
        if event.kind == "started":
            print(f"{path}: running {event.cell_count} cells", file=sys.stderr)
        elif event.kind == "finished" and event.outcome is not None:
            self.done += 1
            outcome = event.outcome
            line = (
                f"[{self.done}/{self.total}] {path}: {outcome.status} in {outcome.duration:.2f} s"
            )
            print(line, file=sys.stderr)

    def _log(self, event: RunEvent) -> None:
        """``--log-output``: the outputs as they arrive; each line marked with its notebook
        when several run."""
        from ganymede.cli.output_log import message_text

        assert self.log is not None
        source = str(event.request.path)
        text = ""
        if event.kind == "output" and event.output is not None:
            msg_type, content = event.output
            text = message_text(msg_type, content, color=wants_color(sys.stderr))
            if self.total > 1:
                text = self.log.feed(source, text)
        elif event.kind in ("cell", "finished") and self.total > 1:
            text = self.log.flush(source)
        if text:
            sys.stderr.write(text)
            sys.stderr.flush()
