"""A ``ganymede serve`` inside the ``ganymede mcp`` process, for when none serves the directory.

It is the same ServerApp and extension ``ganymede serve`` runs, on a free loopback port, with
its runtime file written, so JupyterLab and ``ganymede mcp watch`` can join it. It runs in a
thread on its own event loop: the MCP door keeps the main loop (and stdio), a slow request in
the server never stalls a tool reply, and the server's signal handlers (main thread only) are
left out, since the door owns the process's signals.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import secrets
import threading
from pathlib import Path

from ganymede.client.discover import ServerInfo
from ganymede.errors import ServerStartFailed
from ganymede.serve.app import EXTENSION, GanymedeServerApp, ServeOptions, server_argv
from ganymede.serve.app import server_extensions as serve_extensions
from ganymede.serve.contents import GanymedeContentsManager

LOOPBACK = "127.0.0.1"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0


class _EmbeddedServerApp(GanymedeServerApp):
    """The served app minus what belongs to a process's main thread and stdout."""

    def init_signal(self) -> None:
        """Signals stay with the MCP door, which stops this server on its way out."""

    def start_app(self) -> None:
        # The URL ``ganymede serve`` prints would land among the MCP frames on stdout.
        super(GanymedeServerApp, self).start_app()


class EmbeddedServer:
    """A server for ``root`` in a background thread; ``start()`` returns once it listens."""

    def __init__(self, root: Path, config_file: Path | None = None) -> None:
        self.root = root.resolve()
        self.config_file = config_file
        self.token = secrets.token_hex(24)
        self._app: _EmbeddedServerApp | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    def start(self) -> ServerInfo:
        importlib.import_module(EXTENSION)  # fail here, loudly, rather than serve without it
        self._thread = threading.Thread(target=self._serve, name="ganymede-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT):
            raise ServerStartFailed(f"the server for {self.root} did not start in time")
        if self._failure is not None or self._app is None:
            raise ServerStartFailed(f"the server for {self.root} failed: {self._failure}")
        return ServerInfo(url=self._app.connection_url, token=self.token, root=self.root, pid=None)

    def stop(self) -> None:
        """Save the rooms, shut the kernels down and remove the runtime file, then return."""
        if self._app is None or self._thread is None or not self._thread.is_alive():
            return
        self._app.stop()  # thread-safe: it schedules the clean stop on the server's loop
        self._thread.join(STOP_TIMEOUT)

    def _serve(self) -> None:
        asyncio.set_event_loop(asyncio.new_event_loop())
        options = ServeOptions(
            root=self.root,
            ip=LOOPBACK,
            port=0,
            open_browser=False,
            token=self.token,
            config_file=self.config_file,
            allow_root=hasattr(os, "geteuid") and os.geteuid() == 0,  # containers, CI
        )
        try:
            app = _EmbeddedServerApp(
                jpserver_extensions=serve_extensions(),
                contents_manager_class=GanymedeContentsManager,
                default_url="/lab",
            )
            app.initialize(argv=server_argv(options))
            app.start_app()
        except BaseException as error:  # SystemExit included: jupyter_server exits on bad config
            self._failure = error
            self._ready.set()
            return
        self._app = app
        self._ready.set()
        app.start_ioloop()
