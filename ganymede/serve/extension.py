"""Ganymede's jupyter_server extension: builds the context, adds the handlers, stops cleanly.

Installing Ganymede enables it in every jupyter_server (``jupyter lab``, ``jupyter server``,
``jupyterhub-singleuser``, ``ganymede serve``) through the ``jupyter_server_config.d`` file it
ships, and it needs no class options: while linking, before jupyter_server builds its contents
and kernel managers, it wraps the classes configured for them (``with_file_ids``,
``with_host_comms``, ``with_host_filter``) and sets aside the extensions that would collide with
it. It reads ``ganymede.toml`` itself.
"""

from __future__ import annotations

import asyncio
import io
import logging
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from jupyter_server.extension.application import ExtensionApp
from jupyter_server.gateway.gateway_client import GatewayClient
from jupyter_server.serverapp import ServerApp
from traitlets import Bunch, Float, Unicode

from ganymede.config import load_config
from ganymede.core import Notebooks
from ganymede.core.search_cache import SearchCache
from ganymede.execute.host_runs import run_for_host
from ganymede.fileid import FileIdStore
from ganymede.history import Bounds, HistoryStore
from ganymede.host.responder import HostResponder
from ganymede.host.runs import Runs
from ganymede.process_exit import leave_now
from ganymede.serve import compat, metrics
from ganymede.serve.agents.manager import AGENTS_SETTINGS_KEY, Agents
from ganymede.serve.contents import FollowsFiles, with_file_ids
from ganymede.serve.context import SETTINGS_KEY, GanymedeContext
from ganymede.serve.execution import EXECUTIONS_SETTINGS_KEY, Executions
from ganymede.serve.execution.service import KERNEL_ACTIONS_EVENT
from ganymede.serve.handlers import default_handlers
from ganymede.serve.handlers.forks import FORKS_SETTINGS_KEY, TIMELINES_SETTINGS_KEY
from ganymede.serve.kernels.host_rooms import HostRooms, room_notebook_reader
from ganymede.serve.kernels.manager import drive_host_comms, with_host_comms
from ganymede.serve.kernels.notebooks import NotebookKernels
from ganymede.serve.kernels.websocket import with_host_filter
from ganymede.serve.rooms import ROOMS_SETTINGS_KEY, RoomManager
from ganymede.serve.rooms.forks import Forks
from ganymede.serve.rooms.heap import keep_large_blocks_apart
from ganymede.serve.rooms.history import HistoryRecorder
from ganymede.serve.rooms.timeline import Timelines

WRAPPED_CLASSES: dict[str, Callable[[type[Any]], type[Any]]] = {
    "contents_manager_class": with_file_ids,
    "kernel_manager_class": with_host_comms,
    "kernel_websocket_connection_class": with_host_filter,
}
"""ServerApp's class traits, and what makes the configured class one that Ganymede works with."""


class GanymedeExtension(ExtensionApp):
    name = "ganymede"
    load_other_extensions = True

    ganymede_toml = Unicode(
        "",
        help="The ganymede.toml to read; empty: <root>/ganymede.toml, else the Jupyter config dir.",
    ).tag(config=True)

    room_grace_period = Float(
        60.0, help="Seconds a room with no clients stays open before it saves and closes."
    ).tag(config=True)

    context: GanymedeContext | None = None

    def _link_jupyter_server_extension(self, serverapp: ServerApp) -> None:
        super()._link_jupyter_server_extension(serverapp)
        compat.set_colliding_aside(serverapp.extension_manager, self.log)
        keep_classes_wrapped(serverapp)

    def initialize_settings(self) -> None:
        assert self.serverapp is not None
        root = Path(self.serverapp.root_dir).resolve()
        config = load_config(Path(self.ganymede_toml) if self.ganymede_toml else None, root)
        file_ids = FileIdStore(root, log=self.log)
        self.context = GanymedeContext(config=config, root=root, file_ids=file_ids, log=self.log)
        self.settings[SETTINGS_KEY] = self.context
        keep_large_blocks_apart()
        history = None
        if config.history.enabled:
            bounds = Bounds(config.history.max_age_days, config.history.max_mb_per_document)
            history = HistoryRecorder(HistoryStore(bounds=bounds, log=self.log), log=self.log)
        rooms = RoomManager(
            file_ids,
            hash_algorithm=getattr(self.serverapp.contents_manager, "hash_algorithm", "sha256"),
            save_delay=config.serve.save_delay,
            grace_period=self.room_grace_period,
            settle=config.serve.settle,
            settle_max=config.serve.settle_max,
            runtime_dir=Path(self.serverapp.runtime_dir),
            kernel_outputs=self.context.kernel_outputs,
            history=history,
            max_rooms_mb=config.serve.max_rooms_mb,
            pack_idle_after=config.serve.pack_idle_after,
            log=self.log,
        )
        self.settings[ROOMS_SETTINGS_KEY] = rooms
        rooms.observe(metrics.RoomCounts())
        self.context.on_stop(rooms.stop)
        compat.provide(
            self.settings,
            rooms,
            file_ids,
            self.serverapp.event_logger,
            self.serverapp.extension_manager,
            self.log,
        )
        forks = Forks(rooms, self.log, compat.fork_event_emitter(self.serverapp.event_logger))
        self.settings[FORKS_SETTINGS_KEY] = forks
        store = history.store if history is not None else None
        self.settings[TIMELINES_SETTINGS_KEY] = Timelines(rooms, forks, store, self.log)
        self.context.on_stop(forks.stop)
        notebooks = Notebooks(
            root,
            room_notebook_reader(rooms),
            search_cache=SearchCache(),
            open_names=rooms.open_names,
        )
        self.context.notebooks = notebooks
        self.context.host = HostResponder(
            notebooks,
            self.context.grants,
            editor=HostRooms(rooms, file_ids, idle=config.agent.presence_idle),
            run_notebook=run_for_host,
            log=self.log,
            on_answer=metrics.count_host_call,
        )
        host_comms = drive_host_comms(
            self.serverapp.kernel_manager,
            self.serverapp.session_manager,
            self.context.host,
            self.context.grants,
            self.log,
        )
        if host_comms is not None:
            self.context.on_stop(host_comms.stop)  # before the rooms: self.* lets go of them
        executions = Executions(self.serverapp.kernel_manager, rooms, self.log)
        self.serverapp.event_logger.add_listener(
            schema_id=KERNEL_ACTIONS_EVENT, listener=executions.on_kernel_action
        )
        self.settings[EXECUTIONS_SETTINGS_KEY] = executions
        self.context.on_stop(executions.stop)  # runs first: batches end before rooms save
        agents = Agents(
            rooms,
            file_ids,
            notebooks,
            self.log,
            kernels=NotebookKernels(self.serverapp.session_manager, self.serverapp.kernel_manager),
            executions=executions,
            runs=Runs(notebooks, self.context.grants, run_for_host, self.context.host),
            kernel_specs=self.serverapp.kernel_spec_manager,
            settle=config.agent.settle,
            presence_idle=config.agent.presence_idle,
            forks=forks,
            suggest_by_default=config.agent.mode == "suggest",
        )
        self.settings[AGENTS_SETTINGS_KEY] = agents
        self.context.on_stop(agents.stop)  # before the rooms: sessions let go of theirs
        if config.serve.server_side_execution:
            # JupyterLab's cell executor posts runs to the server only when this reads "true".
            page_config = self.serverapp.web_app.settings.setdefault("page_config_data", {})
            page_config["serverSideExecution"] = "true"
        self._attach_contents(warn=True)
        self._stop_at_once_on_signals()

    def _attach_contents(self, warn: bool) -> None:
        """Give the server's contents manager the file ids and rooms to move. Again once the
        server starts: an extension loading after this one may have replaced the manager with
        one of a class built on the configured one (jupytext's does), which has none yet."""
        assert self.serverapp is not None and self.context is not None
        contents_manager = self.serverapp.contents_manager
        if isinstance(contents_manager, FollowsFiles):
            contents_manager.file_ids = self.context.file_ids
            contents_manager.rooms = self.settings[ROOMS_SETTINGS_KEY]
        elif warn:
            self.log.warning(
                "ganymede: contents manager %s does not move file ids on rename or delete",
                type(contents_manager).__name__,
            )

    def _stop_at_once_on_signals(self) -> None:
        """SIGINT and SIGTERM save every room and end the process as soon as jupyter_server has
        cleaned up (extensions stopped, kernels shut down, runtime files removed).

        jupyter_server's own SIGINT handler asks "Shut down this server (y/[n])?" on a terminal
        and, with none (a spawner, a service manager), a KeyboardInterrupt lands in whatever
        runs and the server stops without its cleanup, or not at all: JupyterHub's SIGINT went
        unheard until its SIGKILL, the last edits lost. After the cleanup the process leaves
        at once (``leave_now``), as ``ganymede serve`` does: interpreter shutdown takes seconds
        and can wait forever on a worker thread. A second signal abandons the clean stop. Left
        alone when the server did not set its signals up (run in a thread, or by a program
        keeping its own), or whoever started it put its own SIGINT handler in place or ignores
        SIGINT.
        """
        assert self.serverapp is not None
        serverapp = self.serverapp
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) != serverapp._signal_stop:
            return
        interrupt = signal.getsignal(signal.SIGINT)
        take_interrupt = interrupt in (serverapp._handle_sigint, signal.default_int_handler)

        async def clean_up_and_leave() -> None:
            status = 0
            loop = asyncio.get_running_loop()
            report = loop.call_later(SLOW_CLEAN_UP, log_waiting_tasks, serverapp.log)
            try:
                await serverapp._cleanup()
            except Exception:
                serverapp.log.exception("ganymede: the server's clean-up failed")
                status = 1
            report.cancel()
            leave_now(status)

        def stop(signum: int, frame: FrameType | None) -> None:
            # A second signal ends it: a spawner escalating from SIGINT to SIGTERM means it.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            if take_interrupt:
                signal.signal(signal.SIGINT, signal.default_int_handler)
            serverapp.log.critical("received signal %s, stopping", signum)
            serverapp._stopping = True
            if hasattr(serverapp, "http_server"):
                serverapp.http_server.stop()
            serverapp.io_loop.add_callback_from_signal(clean_up_and_leave)

        signal.signal(signal.SIGTERM, stop)
        if take_interrupt:
            signal.signal(signal.SIGINT, stop)

    async def _start_jupyter_server_extension(self, serverapp: ServerApp) -> None:
        if self.context is not None:
            self._attach_contents(warn=False)

    def initialize_handlers(self) -> None:
        self.handlers.extend(default_handlers)
        self.ready = True

    ready = False
    """Set once settings and handlers are in place: jupyter_server serves on without an
    extension whose start-up failed, which ``ganymede serve`` must not."""

    async def stop_extension(self) -> None:
        """Runs before jupyter_server shuts kernels down: rooms save their edits here."""
        if self.context is not None:
            await self.context.stop()


SLOW_CLEAN_UP = 20.0
"""Seconds after which a clean-up still running logs what it waits on."""


def log_waiting_tasks(log: logging.Logger | logging.LoggerAdapter[Any]) -> None:
    """Name every task still running, with its stack: a stop that hangs (a spawner will
    SIGKILL it, losing what was unsaved) then says where, so it can be fixed."""
    stacks = []
    for task in asyncio.all_tasks():
        stack = io.StringIO()
        task.print_stack(file=stack)
        stacks.append(stack.getvalue())
    log.warning(
        "ganymede: the clean-up is still running after %.0f s; its tasks:\n%s",
        SLOW_CLEAN_UP,
        "\n".join(stacks),
    )


def keep_classes_wrapped(serverapp: ServerApp) -> None:
    """Wrap the contents manager, kernel manager and kernel websocket classes the server is
    configured with, now and whenever config set later (another extension linking, the hub's
    extension re-applying the command line) sets one again."""
    if not hasattr(serverapp, "gateway_config"):
        # The defaults of the kernel classes ask it; jupyter_server makes this same singleton
        # when it builds its managers, which is after extensions link.
        serverapp.gateway_config = GatewayClient.instance(parent=serverapp)
    for trait, wrap in WRAPPED_CLASSES.items():

        def rewrap(change: Bunch, wrap: Callable[[type[Any]], type[Any]] = wrap) -> None:
            wrapped = wrap(change.new)
            if wrapped is not change.new:
                setattr(change.owner, change.name, wrapped)

        serverapp.observe(rewrap, names=trait)
        setattr(serverapp, trait, wrap(getattr(serverapp, trait)))


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    return [{"module": __name__, "app": GanymedeExtension}]
