"""``ganymede execute NB…``: run notebooks headlessly with parameters in and named results out."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from ganymede.cli.execute_outcomes import (
    COMMAND,
    STDIN,
    announce,
    check_usage,
    keep,
    load_requests,
    look_up,
    open_cache,
    report,
    target,
)
from ganymede.cli.output import EXIT_USAGE, fail, wants_color, warn

if TYPE_CHECKING:
    from ganymede.cli.output_log import LinePrefixer
    from ganymede.config import HostConfig
    from ganymede.execute import RunEvent, RunOutcome, RunRequest
    from ganymede.execute.autosave import Autosave
    from ganymede.execute.kernel import Gateway
    from ganymede.execute.model import NotebookSave
    from ganymede.grant import Grant

AUTOSAVE_EVERY = 10.0


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
    gateway_url: Annotated[
        str | None,
        typer.Option(
            "--gateway-url",
            metavar="URL",
            envvar="JUPYTER_GATEWAY_URL",
            show_envvar=False,
            help="Run the kernels on this Jupyter kernel gateway (env JUPYTER_GATEWAY_URL).",
        ),
    ] = None,
    gateway_token: Annotated[
        str | None,
        typer.Option(
            "--gateway-token",
            metavar="TOKEN",
            envvar="JUPYTER_GATEWAY_AUTH_TOKEN",
            show_envvar=False,
            help="The gateway's token (env JUPYTER_GATEWAY_AUTH_TOKEN).",
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
    check_usage(notebooks, output, no_save, as_json, jobs, timeout, startup_timeout)
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
    gateway = _gateway(gateway_url or settings.gateway_url, gateway_token)

    requests, invalid = load_requests(
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
        gateway=gateway,
    )
    run_cache = None if no_cache or prepare_only else open_cache(cache, loaded)
    hits: dict[Path, RunOutcome] = {}
    keys: dict[Path, str] = {}
    if run_cache is not None:
        requests, hits, keys = look_up(run_cache, requests, cache_input or [], invalid)
        announce(hits, keys)
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
        keep(run_cache, outcomes, keys)
    code = report(
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


def run_parsed(argv: list[str]) -> int | None:
    """The exit code of ``ganymede ARGV`` (``execute …``) run on what ``cached_rerun.parse``
    read, sparing typer's parse; None when it could not read it all (typer must parse it)."""
    from ganymede.cli.cached_rerun import parse
    from ganymede.cli.params import joined_assignments
    from ganymede.errors import GanymedeError

    argv = joined_assignments(argv)
    parsed = parse(argv[1:])
    if parsed is None:
        return None
    invocation = cast(typer.Context, SimpleNamespace(obj={"argv": argv}))
    try:
        command(
            invocation,
            parsed.notebooks,
            params_file=parsed.params_file or None,
            output=parsed.output,
            no_save=parsed.no_save,
            no_autosave=parsed.no_autosave,
            autosave_every=AUTOSAVE_EVERY
            if parsed.autosave_every is None
            else parsed.autosave_every,
            kernel=parsed.kernel,
            timeout=parsed.timeout,
            interrupt_on_timeout=parsed.interrupt_on_timeout,
            startup_timeout=parsed.startup_timeout,
            cwd=parsed.cwd,
            jobs=parsed.jobs,
            as_json=parsed.as_json,
            allow_errors=parsed.allow_errors,
            no_inject=parsed.no_inject,
            cache=parsed.cache,
            cache_input=parsed.cache_input or None,
            no_cache=parsed.no_cache,
            # typer reads these from the environment; so must a command line read without it.
            gateway_url=os.environ.get("JUPYTER_GATEWAY_URL") or None,
            gateway_token=os.environ.get("JUPYTER_GATEWAY_AUTH_TOKEN") or None,
            config=parsed.config,
        )
    except typer.Exit as done:
        return done.exit_code
    except GanymedeError as error:
        fail(str(error), EXIT_USAGE)
    return 0


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

    autosave = Autosave(target(request.path, output))
    autosaves.append(autosave)
    return autosave.save


def _gateway(url: str | None, token: str | None) -> Gateway | None:
    """The gateway the kernels run on, from ``--gateway-url`` or ``[execute] gateway_url``."""
    from ganymede.errors import UsageError
    from ganymede.execute.kernel import gateway_at

    try:
        return gateway_at(url, token)
    except UsageError as error:
        fail(str(error), EXIT_USAGE, COMMAND)


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


class _Progress:
    """A line per notebook on a terminal (a bar, cells done of all, the running cell's first
    line); otherwise plain lines on stderr, one as each notebook starts and one as it ends."""

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
            from rich.table import Column

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(bar_width=20),
                MofNCompleteColumn(),
                TextColumn(
                    "{task.fields[running]}",
                    markup=False,
                    table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1),
                ),
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
                self.tasks[path] = self.bar.add_task(str(path), total=event.cell_count, running="")
            elif event.kind == "running" and path in self.tasks:
                self.bar.update(self.tasks[path], running=running_line(event.source or ""))
            elif event.kind == "cell" and path in self.tasks:
                self.bar.update(self.tasks[path], completed=event.cell_index + 1, running="")
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


def running_line(source: str) -> str:
    """What the progress line shows of the running cell: its first line that is not blank."""
    line = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return f"▸ {line}" if line else ""
