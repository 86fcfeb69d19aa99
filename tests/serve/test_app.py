"""How ``ganymede serve`` settles its options into the ServerApp command line."""

from __future__ import annotations

from pathlib import Path

from ganymede.serve.app import DISABLED_EXTENSIONS, ServeOptions, server_argv, server_extensions


def test_resolved_options_come_first_and_pass_through_options_replace_them() -> None:
    options = ServeOptions(
        root=Path("/srv/notebooks"),
        ip="0.0.0.0",
        port=0,
        open_browser=False,
        token="secret",
        config_file=Path("/srv/notebooks/ganymede.toml"),
        gateway_url="http://gateway:8888",
        allow_root=True,
        extra_args=["--ServerApp.port=9000", "--ServerApp.token=other"],
    )
    assert server_argv(options) == [
        "--ServerApp.root_dir=/srv/notebooks",
        "--ServerApp.ip=0.0.0.0",
        "--ServerApp.open_browser=False",
        "--GanymedeExtension.ganymede_toml=/srv/notebooks/ganymede.toml",
        "--GatewayClient.url=http://gateway:8888",
        "--ServerApp.allow_root=True",
        "--ServerApp.port=9000",
        "--ServerApp.token=other",
    ]


def test_every_setting_of_the_commands_own_yields_to_a_pass_through_option() -> None:
    """traitlets refuses a trait given twice ("ip only accepts one value, got 2")."""
    options = ServeOptions(
        root=Path("/srv"), ip="127.0.0.1", port=8888, open_browser=True, token="t", allow_root=True
    )
    passed = [
        "--ServerApp.root_dir=/elsewhere",
        "--ServerApp.ip=0.0.0.0",
        "--ServerApp.port=9",
        "--ServerApp.open_browser=False",
        "--ServerApp.allow_root=False",
        "--IdentityProvider.token=mine",
    ]
    argv = server_argv(ServeOptions(**{**options.__dict__, "extra_args": passed}))
    assert argv == passed


def test_unset_options_leave_jupyter_server_its_defaults() -> None:
    argv = server_argv(ServeOptions(root=Path("/r"), ip="127.0.0.1", port=8888, open_browser=True))
    assert not any("token" in arg or "Gateway" in arg or "allow_root" in arg for arg in argv)


def test_jupyterlab_and_ours_are_on_and_the_colliding_extensions_off() -> None:
    extensions = server_extensions()
    assert extensions["jupyterlab"] is True
    assert extensions["ganymede.serve.extension"] is True
    assert all(extensions[name] is False for name in DISABLED_EXTENSIONS)


def test_under_a_hub_address_browser_and_token_are_left_to_the_hubs_extension() -> None:
    """jupyterhub's extension sets them from JUPYTERHUB_*, and the command line would win."""
    options = ServeOptions(
        root=Path("/home/ada"), ip=None, port=None, open_browser=None, under_hub=True
    )
    assert server_argv(options) == ["--ServerApp.root_dir=/home/ada"]
    assert server_extensions(under_hub=True)["jupyterhub"] is True
    assert "jupyterhub" not in server_extensions()
