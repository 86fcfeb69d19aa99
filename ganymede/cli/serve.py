"""``ganymede serve [ROOT]``: JupyterLab and Ganymede's services on one Jupyter server."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Annotated

import typer

from ganymede.cli.output import EXIT_USAGE, fail, warn

COMMAND = "ganymede serve"
# jupyter_server's own --Class.trait=value options reach the server untouched.
CONTEXT_SETTINGS = {"allow_extra_args": True, "ignore_unknown_options": True}
# What a JupyterHub spawner sets: where to listen, and the user's Spawner.notebook_dir.
HUB_SERVICE_URL = "JUPYTERHUB_SERVICE_URL"
HUB_ROOT_DIR = "JUPYTERHUB_ROOT_DIR"


def command(
    ctx: typer.Context,
    root: Annotated[
        Path | None,
        typer.Argument(
            metavar="ROOT",
            help="Directory to serve [default: [serve] root, else the current directory].",
            show_default=False,
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option("--port", metavar="N", help="Port to listen on; 0 picks a free one [8888]."),
    ] = None,
    ip: Annotated[
        str | None,
        typer.Option("--ip", metavar="ADDR", help="Address to listen on [127.0.0.1]."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            metavar="TOKEN",
            help="Token clients must present [JUPYTER_TOKEN, else [serve] token, else random].",
        ),
    ] = None,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Do not open a browser on the page.")
    ] = False,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="FILE",
            help="ganymede.toml to read [default: ROOT/ganymede.toml, else the config dir].",
        ),
    ] = None,
    gateway_url: Annotated[
        str | None,
        typer.Option(
            "--gateway-url", metavar="URL", help="Run kernels on this Jupyter kernel gateway."
        ),
    ] = None,
) -> None:
    """Serve JupyterLab with live notebook rooms, file ids and Ganymede's APIs.

    Prints the URL with its token (masked when handed in). jupyter_server's own options pass
    through as --Class.trait=value (e.g. --ServerApp.base_url=/lab-1/) and win over the options
    here. Spawned by JupyterHub (JUPYTERHUB_SERVICE_URL set), it runs as the user's single-user
    server: address, base URL and login come from the hub. Ctrl-C stops the server.
    """
    from ganymede.config import load_config
    from ganymede.errors import ConfigError
    from ganymede.grant.policy import host_defaults

    stray = [arg for arg in ctx.args if not arg.startswith("--")]
    if stray:
        fail(
            f"unexpected argument {stray[0]!r} (server options go as --Class.trait=value)",
            EXIT_USAGE,
            COMMAND,
        )
    looked_up_from = (root if root is not None else Path.cwd()).resolve()
    try:
        settings = load_config(config, looked_up_from)
        host_defaults(settings)
    except ConfigError as error:
        fail(str(error), EXIT_USAGE, COMMAND)
    under_hub = bool(os.environ.get(HUB_SERVICE_URL))
    if under_hub and importlib.util.find_spec("jupyterhub") is None:
        fail(
            f"{HUB_SERVICE_URL} is set (JupyterHub spawned this server) but jupyterhub is not "
            "installed here: pip install jupyterhub",
            EXIT_USAGE,
            COMMAND,
        )
    if under_hub and token is not None:
        fail("--token: under JupyterHub the hub logs users in; leave it out", EXIT_USAGE, COMMAND)
    hub_root = os.environ.get(HUB_ROOT_DIR) if under_hub and root is None else None
    serve_root = (
        Path(hub_root).expanduser().resolve()
        if hub_root
        else _served_root(root, settings.serve.root, settings.source)
    )
    if not serve_root.is_dir():
        fail(f"{serve_root}: not a directory", EXIT_USAGE, COMMAND)
    allow_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if allow_root:
        warn("running as root: kernels and terminals get root's rights")

    from ganymede.serve.app import ServeOptions, serve

    if under_hub:
        # The hub's extension sets address, port and identity from JUPYTERHUB_*; only what is
        # typed here overrides that.
        options = ServeOptions(
            root=serve_root,
            ip=ip,
            port=port,
            open_browser=None,
            config_file=settings.source,
            gateway_url=gateway_url,
            allow_root=allow_root,
            extra_args=list(ctx.args),
            under_hub=True,
        )
    else:
        options = ServeOptions(
            root=serve_root,
            ip=ip if ip is not None else settings.serve.ip,
            port=port if port is not None else settings.serve.port,
            open_browser=settings.serve.open_browser and not no_browser,
            token=_token(token, settings.serve.token),
            config_file=settings.source,
            gateway_url=gateway_url,
            allow_root=allow_root,
            extra_args=list(ctx.args),
        )
    serve(options)


def _served_root(argument: Path | None, configured: str, config_file: Path | None) -> Path:
    """ROOT, else ``[serve] root`` (relative to its config file), else the current directory."""
    if argument is not None:
        return argument.resolve()
    if configured:
        base = config_file.parent if config_file is not None else Path.cwd()
        return (base / Path(configured).expanduser()).resolve()
    return Path.cwd().resolve()


def _token(flag: str | None, configured: str | None) -> str | None:
    """``--token``, else JUPYTER_TOKEN (jupyter_server reads it itself), else ``[serve] token``."""
    if flag is not None:
        return flag
    if os.environ.get("JUPYTER_TOKEN"):
        return None
    return configured
