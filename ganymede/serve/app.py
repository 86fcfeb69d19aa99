"""Build and run the ServerApp that ``ganymede serve`` is.

jupyter_server supplies the contents, kernels, sessions, terminals, events and identity APIs,
token auth and the JupyterLab page; Ganymede's extension adds its own services beside them.
Everything the CLI resolved becomes ``--Class.trait=value`` arguments placed before the user's
own pass-through options, so those win, and both win over jupyter_server's config files.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import socket
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_server.serverapp import ServerApp
from tornado.netutil import bind_sockets

from ganymede.client.discover import MASKED_TOKEN
from ganymede.process_exit import leave_now
from ganymede.serve.compat import COLLIDING_EXTENSIONS as DISABLED_EXTENSIONS

EXTENSION = "ganymede.serve.extension"
HUB_EXTENSION = "jupyterhub"  # its single-user extension (jupyterhub.singleuser.extension)
YOUNG_COLLECTION_EVERY = 20_000  # allocations (Python's default: 700); see tune_garbage_collector


@dataclass(frozen=True)
class ServeOptions:
    """What ``ganymede serve`` settled on from its flags, ``ganymede.toml`` and defaults."""

    root: Path
    ip: str | None
    port: int | None
    open_browser: bool | None
    token: str | None = None
    config_file: Path | None = None
    gateway_url: str | None = None
    allow_root: bool = False
    extra_args: list[str] = field(default_factory=list)
    under_hub: bool = False
    """Spawned by JupyterHub: its single-user extension sets the address, base URL and
    identity from ``JUPYTERHUB_*``; an unset ``ip``/``port``/``open_browser`` leaves them to it."""


# Traits a pass-through option may name by another name than the one ``server_argv`` uses.
TRAIT_ALIASES = {
    "ServerApp.token": "IdentityProvider.token",
    "ServerApp.notebook_dir": "ServerApp.root_dir",
}


def server_argv(options: ServeOptions) -> list[str]:
    """The ServerApp command line for ``options``. A pass-through argument replaces the setting
    of the same trait (traitlets refuses a trait given twice), so what the user typed wins."""
    argv = [f"--ServerApp.root_dir={options.root}"]
    if options.ip is not None:
        argv.append(f"--ServerApp.ip={options.ip}")
    if options.port is not None:
        argv.append(f"--ServerApp.port={options.port}")
    if options.open_browser is not None:
        argv.append(f"--ServerApp.open_browser={options.open_browser}")
    if options.token is not None:
        argv.append(f"--IdentityProvider.token={options.token}")
    if options.config_file is not None:
        argv.append(f"--GanymedeExtension.ganymede_toml={options.config_file}")
    if options.gateway_url is not None:
        argv.append(f"--GatewayClient.url={options.gateway_url}")
    if options.allow_root:
        argv.append("--ServerApp.allow_root=True")
    passed = {_trait_named(arg) for arg in options.extra_args}
    return [*(arg for arg in argv if _trait_named(arg) not in passed), *options.extra_args]


def _trait_named(argument: str) -> str:
    """``Class.trait`` of a ``--Class.trait=value`` argument, by the name ``server_argv`` uses."""
    trait = argument.removeprefix("--").split("=", 1)[0]
    return TRAIT_ALIASES.get(trait, trait)


def server_extensions(under_hub: bool = False) -> dict[str, bool]:
    enabled = {"jupyterlab": True, EXTENSION: True}
    if under_hub:
        enabled[HUB_EXTENSION] = True
    return enabled | dict.fromkeys(DISABLED_EXTENSIONS, False)


class GanymedeServerApp(ServerApp):
    """jupyter_server's ServerApp with two changes a served person or a test needs (the
    extension makes Ctrl-C stop at once, in this server as in any other).

    - ``--port 0`` keeps the socket the OS bound instead of closing it and binding the number
      again, so no other process can take the port in between.
    - The URL is printed on stdout, apart from the log lines on stderr, with the token in full
      only when the server made it.
    """

    _held_sockets: list[socket.socket] | None = None

    def _find_http_port(self) -> None:
        if self.port != 0:
            super()._find_http_port()
            return
        self._held_sockets = bind_sockets(0, self.ip)
        self.port = self._held_sockets[0].getsockname()[1]

    def _bind_http_server_tcp(self) -> bool:
        if self._held_sockets is None:
            return bool(super()._bind_http_server_tcp())
        self.http_server.add_sockets(self._held_sockets)
        return True

    def start_app(self) -> None:
        super().start_app()
        print(f"ganymede: serving {self.root_dir} at {self.url_with_token}", flush=True)

    @property
    def url_with_token(self) -> str:
        """The page to open, with the token the server made in full; one handed in (the
        environment, ``--token``, a spawner) masked as jupyter_server masks it, since whoever
        handed it in has it and a log line is no place for it. Clients find it in the runtime
        file."""
        parts = urllib.parse.urlsplit(self.connection_url)
        provider = self.identity_provider
        token = provider.token if provider.token_generated else MASKED_TOKEN
        query = urllib.parse.urlencode({"token": token}, safe=".") if provider.token else ""
        return parts._replace(path=self.default_url, query=query).geturl()


def use_uvloop() -> None:
    """Run the server's event loop on uvloop where it is installed."""
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def tune_garbage_collector() -> None:
    """Keep Python's cycle collector from pausing the server for a tenth of a second at a time.

    Opening or merging a long notebook allocates a hundred thousand dicts and lists that live
    on (parsed versions, fingerprints), and with the default thresholds that set off a full
    collection nearly every time, each walking every object of the process: 130-240 ms on a
    2,000-cell notebook, growing with the rooms open, and paid inside the merge that makes a
    file's change visible. What the server holds once started (modules, classes, JupyterLab's
    settings) is never garbage, so it is frozen out of every collection, and young collections
    run every 20,000 allocations instead of 700.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, *gc.get_threshold()[1:])


def serve(options: ServeOptions) -> None:
    """Run the server until it is stopped (Ctrl-C, SIGTERM, or the shutdown API).

    The defaults given here as traits (JupyterLab's page) yield to jupyter_server config files;
    the arguments from ``server_argv`` do not.
    """
    use_uvloop()
    # jupyter_server logs an extension that fails to import and serves on without it, which
    # would leave every Ganymede endpoint answering 404: import it here so that fails loudly.
    importlib.import_module(EXTENSION)
    app = _server_app(options.under_hub)
    app.initialize(argv=server_argv(options))
    if not _extension_ready(app):
        app.log.critical("ganymede: the Ganymede extension failed to start (see above); stopping")
        raise SystemExit(1)
    tune_garbage_collector()
    app.start()
    leave_now()


def _server_app(under_hub: bool) -> GanymedeServerApp:
    """The ServerApp, made under a hub as ``jupyterhub-singleuser`` makes its own, through
    jupyterhub's ``make_serverapp``: that is where it honours the hub's
    ``JUPYTERHUB_DISABLE_USER_CONFIG`` (``c.Spawner.disable_user_config``)."""
    traits: dict[str, Any] = {
        "jpserver_extensions": server_extensions(under_hub),
        "default_url": "/lab",
    }
    if not under_hub:
        return GanymedeServerApp.instance(**traits)
    from jupyterhub.singleuser.extension import JupyterHubSingleUser

    maker = type(
        "GanymedeSingleUser", (JupyterHubSingleUser,), {"serverapp_class": GanymedeServerApp}
    )
    app: GanymedeServerApp = maker.make_serverapp(**traits)
    return app


def _extension_ready(app: ServerApp) -> bool:
    """Whether Ganymede's extension loaded: jupyter_server only logs one that failed."""
    from ganymede.serve.extension import GanymedeExtension

    apps = app.extension_manager.extension_apps.get(EXTENSION, set())
    return any(isinstance(ext, GanymedeExtension) and ext.ready for ext in apps)
