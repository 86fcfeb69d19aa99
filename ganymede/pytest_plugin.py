"""``pytest --ganymede``: each notebook is a test item, run by ``ganymede execute``'s runner.

pytest loads this module into every run in an environment where Ganymede is installed (the
``pytest11`` entry point), so it adds its options and nothing else unless ``--ganymede`` is given;
the runner, jupyter_client and the kernels are imported only then. A notebook passes when its run
ends ``ok``: the ``raises-exception`` and ``skip-execution`` tags, parameters, timeouts and the
kernel work as under ``ganymede execute``, and nbmake's ``metadata.execution`` settings
(``timeout``, ``allow_errors``) are honoured. A failure reports the failing cell's source and its
traceback as plain text; the run's warnings become pytest warnings, and its named results
become the item's user properties (JUnit XML ``<property>`` elements).

Items run one after another in a process (each pytest-xdist worker is one), so the plugin keeps
one event loop and a ``NotebookQueue`` for the session: while a notebook runs, the kernel of the
next one (pytest's ``nextitem``) is already starting.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _pytest._code.code import ReprFileLocation, TerminalRepr

if TYPE_CHECKING:
    import asyncio

    from _pytest._io import TerminalWriter

    from ganymede.execute import NotebookQueue, RunOutcome, RunRequest
    from ganymede.execute.host_runs import ExecuteHost

SKIPPED_DIRECTORIES = frozenset({".ipynb_checkpoints", "_build"})
"""JupyterLab's checkpoints and built docs hold copies of notebooks, not notebooks to test."""


WARM_AHEAD = 4
"""Kernels warming for the next notebooks while one runs. Start-up is most of a short
notebook's run and is partly waiting (process spawn, the handshake), so even on two cores four
start-ups side by side finish sooner than two (BENCHMARKS.md)."""


class NotebookWarning(UserWarning):
    """Something the run of a notebook warned about (an unknown parameter, an allowed error)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ganymede", "notebooks run by ganymede execute's runner")
    group.addoption(
        "--ganymede", action="store_true", default=False, help="Run each .ipynb as a test."
    )
    group.addoption(
        "--ganymede-param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="A parameter for every notebook, typed as ganymede execute -p types it.",
    )
    group.addoption(
        "--ganymede-params-file",
        action="append",
        default=[],
        metavar="FILE",
        help="Parameters from a .json, .toml, .yaml or .yml file (before --ganymede-param).",
    )
    group.addoption(
        "--ganymede-kernel", metavar="NAME", help="Kernel to use instead of each notebook's."
    )
    group.addoption(
        "--ganymede-timeout",
        type=float,
        metavar="S",
        help="Seconds a cell may run (default: [execute] timeout, else no limit).",
    )
    group.addoption(
        "--ganymede-interrupt-on-timeout",
        action="store_true",
        default=False,
        help="Interrupt a cell past the timeout: it fails with KeyboardInterrupt.",
    )
    group.addoption(
        "--ganymede-startup-timeout",
        type=float,
        metavar="S",
        help="Seconds a kernel may take to start (default: [execute] startup_timeout, 60).",
    )
    group.addoption(
        "--ganymede-allow-errors",
        action="store_true",
        default=False,
        help="Run every cell even after one raises; the notebook then passes.",
    )
    group.addoption(
        "--ganymede-gateway-url",
        metavar="URL",
        help="Run the kernels on this Jupyter kernel gateway (default: JUPYTER_GATEWAY_URL, "
        "else [execute] gateway_url).",
    )
    group.addoption(
        "--ganymede-gateway-token",
        metavar="TOKEN",
        help="The gateway's token (default: JUPYTER_GATEWAY_AUTH_TOKEN).",
    )
    group.addoption(
        "--ganymede-warm",
        type=int,
        default=WARM_AHEAD,
        metavar="N",
        help=f"Kernels started for the notebooks next in line [{WARM_AHEAD}] (0: none).",
    )
    group.addoption(
        "--ganymede-output",
        metavar="DIR",
        help="Write each executed notebook under DIR, at its path relative to the rootdir.",
    )
    group.addoption(
        "--ganymede-overwrite",
        action="store_true",
        default=False,
        help="Write each executed notebook back in place.",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("ganymede"):
        if config.getoption("ganymede_output") and config.getoption("ganymede_overwrite"):
            raise pytest.UsageError("--ganymede-output and --ganymede-overwrite exclude each other")
        for flag in ("timeout", "startup_timeout"):
            value = config.getoption(f"ganymede_{flag}")
            if value is not None and value <= 0:
                name = "--ganymede-" + flag.replace("_", "-")
                raise pytest.UsageError(f"{name} must be more than 0 seconds, got {value:g}")
        if config.getoption("ganymede_warm") < 0:
            raise pytest.UsageError("--ganymede-warm must be 0 or more")
        config.pluginmanager.register(NotebookPlugin(config), "ganymede-notebooks")


class NotebookPlugin:
    """The hooks of a ``--ganymede`` session, its options read once, and the runner state it
    keeps between items."""

    def __init__(self, config: pytest.Config) -> None:
        from ganymede.cli.params import build_params
        from ganymede.config import load_config
        from ganymede.errors import GanymedeError
        from ganymede.execute.kernel import gateway_at

        self.config = config
        try:
            loaded = load_config(None, config.rootpath)
            files = [Path(name) for name in config.getoption("ganymede_params_file")]
            flags = [("-p", text) for text in config.getoption("ganymede_param")]
            params = build_params(files, flags)
            gateway = gateway_at(
                config.getoption("ganymede_gateway_url")
                or os.environ.get("JUPYTER_GATEWAY_URL")
                or loaded.execute.gateway_url,
                config.getoption("ganymede_gateway_token")
                or os.environ.get("JUPYTER_GATEWAY_AUTH_TOKEN"),
            )
        except GanymedeError as error:
            raise pytest.UsageError(str(error)) from None
        settings = loaded.execute
        timeout = config.getoption("ganymede_timeout")
        startup_timeout = config.getoption("ganymede_startup_timeout")
        self.options: dict[str, Any] = {
            "params": params,
            "kernel_name": config.getoption("ganymede_kernel") or settings.kernel,
            "timeout": timeout if timeout is not None else settings.timeout,
            "interrupt_on_timeout": config.getoption("ganymede_interrupt_on_timeout"),
            "startup_timeout": startup_timeout
            if startup_timeout is not None
            else settings.startup_timeout,
            "allow_errors": config.getoption("ganymede_allow_errors"),
            "gateway": gateway,
        }
        self.host_config = loaded.host
        self._runs: _Runs | None = None
        self._order: dict[int, int] = {}

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.File | None:
        if file_path.suffix != ".ipynb" or SKIPPED_DIRECTORIES.intersection(file_path.parts):
            return None
        return NotebookFile.from_parent(parent, path=file_path)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._order = {id(item): index for index, item in enumerate(session.items)}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Iterator[None]:
        if isinstance(item, NotebookItem):
            item.following = self._following(item, nextitem)
        return (yield)

    def _following(self, item: NotebookItem, nextitem: pytest.Item | None) -> list[NotebookItem]:
        """The notebooks this process runs after ``item``, as far ahead as kernels warm.

        A pytest-xdist worker knows only its next item (the others may go to other workers);
        a lone process runs the session's items in order."""
        ahead = self.config.getoption("ganymede_warm")
        if hasattr(self.config, "workerinput") or id(item) not in self._order:
            candidates: list[pytest.Item] = [] if nextitem is None else [nextitem]
        else:
            start = self._order[id(item)] + 1
            candidates = item.session.items[start : start + ahead]
        return [later for later in candidates[:ahead] if isinstance(later, NotebookItem)]

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._runs is not None:
            self._runs.close()
            self._runs = None

    def runs(self) -> _Runs:
        """The session's runner state, made when the first notebook runs."""
        if self._runs is None:
            self._runs = _Runs(self)
        return self._runs


class _Runs:
    """One event loop, one queue and one host for every notebook this process runs."""

    def __init__(self, plugin: NotebookPlugin) -> None:
        import asyncio

        from ganymede.execute import NotebookQueue
        from ganymede.execute.host_runs import ExecuteHost
        from ganymede.grant import grant_from_config

        self.options = plugin.options
        host = plugin.host_config
        self.host: ExecuteHost = ExecuteHost(
            plugin.config.rootpath, grant_from_config(host.read, host.run, host.edit_self)
        )
        self.loop: asyncio.AbstractEventLoop = asyncio.new_event_loop()
        self.queue: NotebookQueue = NotebookQueue()

    def request(
        self, path: Path, notebook: dict[str, Any], overrides: dict[str, Any]
    ) -> RunRequest:
        from ganymede.execute import RunRequest

        options = {**self.options, **overrides}
        return RunRequest(path=path, notebook=notebook, host=self.host.attach_for(path), **options)

    def run(self, request: RunRequest, following: list[RunRequest]) -> RunOutcome:
        return self.loop.run_until_complete(self.queue.run(request, then=following))

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.queue.aclose())
        finally:
            self.loop.close()
            self.host.close()


def _nbmake_settings(notebook: dict[str, Any], path: str) -> dict[str, Any]:
    """nbmake's per-notebook settings, ``metadata.execution.timeout`` and ``allow_errors``,
    which win over the session's as they do under nbmake; InvalidNotebook if mistyped."""
    from ganymede.errors import InvalidNotebook

    execution = notebook.get("metadata", {}).get("execution")
    if not isinstance(execution, dict):
        return {}
    settings: dict[str, Any] = {}
    if "timeout" in execution:
        timeout = execution["timeout"]
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise InvalidNotebook(path, "metadata.execution.timeout must be a number of seconds")
        settings["timeout"] = float(timeout)
    if "allow_errors" in execution:
        if not isinstance(execution["allow_errors"], bool):
            raise InvalidNotebook(path, "metadata.execution.allow_errors must be true or false")
        settings["allow_errors"] = execution["allow_errors"]
    return settings


class NotebookFile(pytest.File):
    """A notebook file: one item, the whole notebook."""

    def collect(self) -> Iterator[pytest.Item]:
        yield NotebookItem.from_parent(self, name=self.path.name)


class NotebookFailed(Exception):
    """The run of a notebook ended other than ``ok``; carries its outcome for the report."""

    def __init__(self, outcome: RunOutcome) -> None:
        super().__init__(outcome.status)
        self.outcome = outcome


class NotebookItem(pytest.Item):
    """One notebook, run on a fresh kernel from top to bottom."""

    following: list[NotebookItem]
    """The notebooks this process runs next, whose kernels warm while this one runs."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._run_request: RunRequest | None = None
        self.following = []

    def run_request(self) -> RunRequest:
        """The notebook as read from its file (once), as the runner is asked to run it.

        An unreadable or invalid notebook raises InvalidNotebook, which fails the item."""
        if self._run_request is None:
            from ganymede.errors import InvalidNotebook
            from ganymede.notebook.nbio import parse_notebook

            try:
                content = self.path.read_bytes()
            except OSError as error:
                raise InvalidNotebook(str(self.path), error.strerror or str(error)) from None
            notebook = parse_notebook(content, str(self.path))
            overrides = _nbmake_settings(notebook, str(self.path))
            self._run_request = self._runs().request(self._shown_path(), notebook, overrides)
        return self._run_request

    def _shown_path(self) -> Path:
        """The notebook's path from where pytest was started, as the run's messages name it."""
        try:
            return self.path.relative_to(self.config.invocation_params.dir)
        except ValueError:
            return self.path

    def runtest(self) -> None:
        from ganymede.errors import InvalidNotebook

        request = self.run_request()
        following = []
        for later in self.following:
            with contextlib.suppress(InvalidNotebook):  # its own item fails with the reason
                following.append(later.run_request())
        outcome = self._runs().run(request, following)
        self._run_request = None  # the outcome holds the notebook now
        for message in outcome.warnings:
            self.warn(NotebookWarning(message))
        for name, value in outcome.results.items():
            self.user_properties.append((name, json.dumps(value)))
        if outcome.ran:
            self._write(outcome)
        if outcome.status != "ok":
            raise NotebookFailed(outcome)

    def _write(self, outcome: RunOutcome) -> None:
        from ganymede.core.files import atomic_write
        from ganymede.notebook.nbio import dumps_notebook

        output = self.config.getoption("ganymede_output")
        if output:
            try:
                relative = self.path.relative_to(self.config.rootpath)
            except ValueError:  # given on the command line from outside the rootdir
                relative = Path(self.path.name)
            target = Path(output) / relative
        elif self.config.getoption("ganymede_overwrite"):
            target = self.path
        else:
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, dumps_notebook(outcome.notebook).encode("utf-8"))

    def _runs(self) -> _Runs:
        plugin = self.config.pluginmanager.get_plugin("ganymede-notebooks")
        assert isinstance(plugin, NotebookPlugin)
        return plugin.runs()

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        from ganymede.errors import InvalidNotebook
        from ganymede.execute.failure import failure_report, failure_summary

        if isinstance(excinfo.value, NotebookFailed):
            outcome = excinfo.value.outcome
            return _Report(failure_report(outcome), failure_summary(outcome), self.path)
        if isinstance(excinfo.value, InvalidNotebook):
            return _Report(str(excinfo.value), str(excinfo.value), self.path)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"notebook {self.name}"


class _Report(TerminalRepr):
    """The failure as plain text, with a one-line summary for pytest's short test summary."""

    def __init__(self, text: str, summary: str, path: Path) -> None:
        self.text = text
        self.reprcrash = ReprFileLocation(str(path), 0, summary)

    def toterminal(self, tw: TerminalWriter) -> None:
        tw.line(self.text)
