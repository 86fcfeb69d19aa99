"""``ganymede execute --gateway-url`` against a real Jupyter Kernel Gateway on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stress.gateway import Gateway, running_gateway
from tests.cli.test_execute import code, ganymede, json_lines, write_notebook

TOKEN = "gateway-secret"
# A gateway and its kernels start in the first test that needs them.
pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with running_gateway(
        tmp_path_factory.mktemp("gateway"),
        f"--KernelGatewayApp.auth_token={TOKEN}",
        "--JupyterWebsocketPersonality.env_whitelist=GANYMEDE_PARAMS",
        "--JupyterWebsocketPersonality.list_kernels=True",
    ) as running:
        yield running


def on_gateway(gateway: Gateway, *args: str, cwd: Path) -> Any:
    return ganymede("--gateway-url", gateway.url, "--gateway-token", TOKEN, *args, cwd=cwd)


def gateway_kernels(gateway: Gateway) -> list[dict[str, Any]]:
    headers = {"Authorization": f"token {TOKEN}"}
    with httpx.Client(base_url=gateway.url, headers=headers, timeout=30) as client:
        kernels = client.get("/api/kernels").json()
    assert isinstance(kernels, list)
    return kernels


def comparable(path: Path) -> list[tuple[Any, Any]]:
    """Each cell's outputs and execution count: what a run puts in a notebook, less timings."""
    cells = json.loads(path.read_text())["cells"]
    return [(cell.get("outputs"), cell.get("execution_count")) for cell in cells]


CELLS = (
    code("n = 0", "parameters"),
    code("import sys\nprint('out', n)\nprint('err', file=sys.stderr)"),
    code("from IPython.display import display, HTML\ndisplay(HTML('<b>hi</b>'))\nn * 2"),
    code("from ganymede.kernel import params, result\nresult('n', n)\nresult('env', params())"),
)


def test_a_notebook_runs_on_the_gateway_as_it_runs_here(gateway: Gateway, tmp_path: Path) -> None:
    local = write_notebook(tmp_path / "local.ipynb", *CELLS)
    remote = write_notebook(tmp_path / "remote.ipynb", *CELLS)
    here = ganymede("local.ipynb", "-p", "n=21", "--json", cwd=tmp_path)
    there = on_gateway(gateway, "remote.ipynb", "-p", "n=21", "--json", cwd=tmp_path)
    assert here.returncode == 0, here.stderr
    assert there.returncode == 0, there.stderr
    assert comparable(remote) == comparable(local)
    assert json_lines(there.stdout)[0]["results"] == {"n": 21, "env": {"n": 21}}
    assert json_lines(there.stdout)[0]["results"] == json_lines(here.stdout)[0]["results"]
    assert gateway_kernels(gateway) == []  # deleted when the notebook ended


def test_a_failing_cell_fails_the_run_with_its_traceback(gateway: Gateway, tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "fails.ipynb", code("1 / 0"), code("print('never')"))
    done = on_gateway(gateway, "fails.ipynb", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "raised ZeroDivisionError: division by zero" in done.stderr
    cells = json.loads(path.read_text())["cells"]
    assert cells[0]["outputs"][0]["ename"] == "ZeroDivisionError"
    assert cells[1]["outputs"] == []


def test_url_and_token_from_the_environment(gateway: Gateway, tmp_path: Path) -> None:
    write_notebook(tmp_path / "nb.ipynb", code("import os\nprint(os.getppid())"))
    env = {"JUPYTER_GATEWAY_URL": gateway.url, "JUPYTER_GATEWAY_AUTH_TOKEN": TOKEN}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        done = ganymede("nb.ipynb", "-o", "out.ipynb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [output] = json.loads((tmp_path / "out.ipynb").read_text())["cells"][0]["outputs"]
    assert output["text"] == [f"{gateway.process.pid}\n"]  # the gateway's child, not ours


def test_the_config_names_the_gateway(gateway: Gateway, tmp_path: Path) -> None:
    (tmp_path / "ganymede.toml").write_text(f'[execute]\ngateway_url = "{gateway.url}"\n')
    write_notebook(tmp_path / "nb.ipynb", code("import os\nprint(os.getppid())"))
    done = ganymede("nb.ipynb", "--gateway-token", TOKEN, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    cells = json.loads((tmp_path / "nb.ipynb").read_text())["cells"]
    assert cells[0]["outputs"][0]["text"] == [f"{gateway.process.pid}\n"]


def test_a_gateway_that_is_down_is_a_clear_error_and_writes_no_file(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "nb.ipynb", code("print(1)"))
    before = path.read_bytes()
    # Port 1 is privileged and unused: nothing answers there.
    done = ganymede(
        "--gateway-url", "http://127.0.0.1:1", "nb.ipynb", "-o", "out.ipynb", cwd=tmp_path
    )
    assert done.returncode == 4, done.stderr
    assert "gateway http://127.0.0.1:1 cannot be reached" in done.stderr
    assert not (tmp_path / "out.ipynb").exists()
    done = ganymede("--gateway-url", "http://127.0.0.1:1", "nb.ipynb", cwd=tmp_path)
    assert done.returncode == 4
    assert path.read_bytes() == before


def test_a_wrong_token_is_the_gateways_refusal(gateway: Gateway, tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "nb.ipynb", code("print(1)"))
    before = path.read_bytes()
    done = ganymede(
        "--gateway-url", gateway.url, "--gateway-token", "wrong", "nb.ipynb", cwd=tmp_path
    )
    assert done.returncode == 4, done.stderr
    assert f"gateway {gateway.url} could not start kernel python3: 401" in done.stderr
    assert path.read_bytes() == before


def test_a_kernel_the_gateway_lacks_is_its_refusal(gateway: Gateway, tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "nb.ipynb", code("print(1)"))
    before = path.read_bytes()
    done = on_gateway(gateway, "-k", "no-such-kernel", "nb.ipynb", cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    assert "could not start kernel no-such-kernel" in done.stderr
    assert path.read_bytes() == before


def test_a_bad_url_is_a_usage_error(tmp_path: Path) -> None:
    write_notebook(tmp_path / "nb.ipynb", code("print(1)"))
    done = ganymede("--gateway-url", "gateway:8888", "nb.ipynb", cwd=tmp_path)
    assert done.returncode == 2
    assert "gateway URL gateway:8888: give an http:// or https:// URL" in done.stderr


def test_timeout_ends_the_run(gateway: Gateway, tmp_path: Path) -> None:
    write_notebook(tmp_path / "slow.ipynb", code("import time\ntime.sleep(60)"), code("1"))
    done = on_gateway(gateway, "slow.ipynb", "--timeout", "1", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "ran longer than 1 s" in done.stderr
    assert gateway_kernels(gateway) == []


def test_interrupt_on_timeout_goes_on_through_the_gateways_interrupt(
    gateway: Gateway, tmp_path: Path
) -> None:
    path = write_notebook(
        tmp_path / "slow.ipynb", code("import time\ntime.sleep(60)"), code("print('after')")
    )
    done = on_gateway(
        gateway,
        "slow.ipynb",
        "--timeout",
        "1",
        "--interrupt-on-timeout",
        "--allow-errors",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    cells = json.loads(path.read_text())["cells"]
    assert cells[0]["outputs"][-1]["ename"] == "KeyboardInterrupt"
    assert cells[1]["outputs"][0]["text"] == ["after\n"]


@pytest.mark.parametrize("attempt", range(5))
def test_a_kernel_dying_on_the_gateway_ends_the_run_as_dead(
    gateway: Gateway, tmp_path: Path, attempt: int
) -> None:
    """Run more than once: the gateway restarts the dead kernel, and the run's delete can land
    in that restart, which fails it (about one run in ten); the kernel must still go."""
    path = write_notebook(
        tmp_path / "dies.ipynb",
        code("print('before')"),
        code("import os\nos._exit(1)"),
        code("print('never')"),
    )
    done = on_gateway(gateway, "dies.ipynb", cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    assert "while running cell 1" in done.stderr
    cells = json.loads(path.read_text())["cells"]
    assert cells[0]["outputs"][0]["text"] == ["before\n"]
    assert cells[2]["outputs"] == []
    assert gateway_kernels(gateway) == []


async def test_kernels_warmed_on_the_gateway_for_nothing_are_deleted(
    gateway: Gateway, tmp_path: Path
) -> None:
    from ganymede.execute import NotebookQueue
    from ganymede.execute.kernel import gateway_at
    from tests.execute.notebooks import notebook, request

    remote = gateway_at(gateway.url, TOKEN)
    first = request(tmp_path, notebook("x = 1"), name="first.ipynb", gateway=remote)
    later = [
        request(tmp_path, notebook("x = 2"), name=f"later{n}.ipynb", gateway=remote)
        for n in range(2)
    ]
    queue = NotebookQueue()
    try:
        outcome = await queue.run(first, then=later)
        assert outcome.status == "ok", outcome.error
    finally:
        await queue.aclose()
    assert gateway_kernels(gateway) == []
