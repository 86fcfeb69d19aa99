"""``ganymede mcp --http``: reading ``[HOST:]PORT``, binding it, the bearer gate, and the
command's usage errors (each refused before any server is found or started)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from ganymede.errors import UsageError
from ganymede.mcp.http import BearerGate, endpoint, parse_address
from tests.serve.conftest import jupyter_env

TOKEN = "s3cret-token"


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("8000", ("127.0.0.1", 8000)),
        ("0", ("127.0.0.1", 0)),
        ("localhost:9000", ("localhost", 9000)),
        ("0.0.0.0:8000", ("0.0.0.0", 8000)),
        ("[::1]:8000", ("::1", 8000)),
        ("127.0.0.1:65535", ("127.0.0.1", 65535)),
    ],
)
def test_an_address_is_a_port_with_an_optional_host(text: str, address: tuple[str, int]) -> None:
    assert parse_address(text) == address


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "the port must be a number from 0 to 65535"),
        ("http", "the port must be a number from 0 to 65535"),
        ("localhost:", "the port must be a number from 0 to 65535"),
        ("127.0.0.1:65536", "the port must be a number from 0 to 65535"),
        ("127.0.0.1:-1", "the port must be a number from 0 to 65535"),
        ("127.0.0.1:\uff18\uff10", "the port must be a number from 0 to 65535"),  # fullwidth 80
        (":8000", "the host before ':' is empty"),
        ("::1:8000", "write an IPv6 address in brackets, as [::1]:8000"),
        ("[localhost]:8000", "'localhost' is not an IPv6 address"),
    ],
)
def test_a_malformed_address_is_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(UsageError) as refused:
        parse_address(text)
    assert str(refused.value) == f"--http {text!r}: {reason}"


def test_an_endpoint_on_port_0_listens_on_a_free_port_with_a_random_token() -> None:
    made = endpoint("127.0.0.1:0", None)
    with made.listener:
        port = made.listener.getsockname()[1]
        assert port != 0
        assert made.url == f"http://127.0.0.1:{port}/mcp"
        assert made.token_generated and len(made.token) >= 32
        assert made.shown_token == made.token
        other = endpoint("0", None)
        with other.listener:
            assert other.token != made.token


def test_a_token_handed_in_is_used_and_not_shown() -> None:
    made = endpoint("0", TOKEN)
    with made.listener:
        assert made.token == TOKEN and not made.token_generated
        assert made.shown_token == "..."


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port this test holds, listening, for the door to find busy."""
    with socket.create_server(("127.0.0.1", 0)) as held:
        yield held.getsockname()[1]


def test_a_busy_port_is_a_usage_error(taken_port: int) -> None:
    with pytest.raises(UsageError, match="cannot listen there: Address already in use"):
        endpoint(f"127.0.0.1:{taken_port}", None)


def test_an_unknown_host_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as refused:
        endpoint("nohost.invalid:0", None)
    assert str(refused.value).startswith("--http 'nohost.invalid:0': unknown host 'nohost.invalid'")


def test_an_address_not_of_this_machine_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="cannot listen there: Cannot assign requested address"):
        endpoint("192.0.2.1:0", None)  # TEST-NET-1, never a local address


def test_an_empty_token_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--http-token is empty"):
        endpoint("0", " ")


async def test_the_gate_lets_through_only_the_endpoint_token() -> None:
    async def reached(request: Request) -> PlainTextResponse:
        return PlainTextResponse("reached")

    app = BearerGate(Starlette(routes=[Route("/mcp", reached, methods=["POST"])]), TOKEN)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
    ) as client:
        right = await client.post("/mcp", headers={"Authorization": f"Bearer {TOKEN}"})
        wrong = await client.post("/mcp", headers={"Authorization": f"Bearer {TOKEN}x"})
        basic = await client.post("/mcp", headers={"Authorization": f"Basic {TOKEN}"})
        bare = await client.post("/mcp")
    assert (right.status_code, right.text) == (200, "reached")
    for refused in (wrong, basic, bare):
        assert refused.status_code == 401
        assert refused.json()["error"] == "invalid_token"
        assert refused.headers["WWW-Authenticate"] == 'Bearer realm="ganymede mcp"'
    assert wrong.json()["error_description"] == "the bearer token is not this endpoint's"
    assert "needs the header 'Authorization: Bearer <token>'" in bare.json()["error_description"]


def run_door(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = jupyter_env(cwd / "jupyter")
    env.pop("GANYMEDE_MCP_TOKEN", None)
    return subprocess.run(
        [sys.executable, "-m", "ganymede", "mcp", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_the_command_refuses_a_busy_port_in_one_line(tmp_path: Path, taken_port: int) -> None:
    done = run_door(tmp_path, "--http", f"127.0.0.1:{taken_port}")
    assert done.returncode == 2
    assert done.stderr == (
        f"ganymede mcp: error: --http '127.0.0.1:{taken_port}': cannot listen there: "
        "Address already in use\n"
    )
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("--http", "localhost:http"), "--http 'localhost:http': the port must be a number"),
        (("--http", "0", "--http-token", ""), "--http-token is empty"),
        (("--http-token", TOKEN), "--http-token goes with --http"),
    ],
)
def test_the_command_refuses_bad_http_options(
    tmp_path: Path, args: tuple[str, ...], error: str
) -> None:
    done = run_door(tmp_path, *args)
    assert done.returncode == 2
    assert done.stderr.startswith(f"ganymede mcp: error: {error}")
    assert done.stderr.count("\n") == 1
