"""notebooks.run through the responder on real kernels: params, results, grants, slots, cancel."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import AsyncKernelManager

from ganymede.core import Notebooks
from ganymede.errors import HostCallError
from ganymede.execute import RunRequest, run_notebook
from ganymede.execute.host_runs import run_for_host
from ganymede.execute.model import RunOutcome
from ganymede.fileid import FileIdStore
from ganymede.grant import Grant, Grants, GrantStore, NotebookGrant
from ganymede.host.api import Caller
from ganymede.host.responder import HostResponder
from ganymede.host.runs import RunOrder
from tests.core.disk import code, write_notebook

COUNTER = (
    "from ganymede.kernel import params, result\n"
    "result('counter', params().get('counter', 'Fremont'))\n"
    "result('doubled', params().get('n', 1) * 2)"
)
GATED = (
    "import os, pathlib, time\n"
    "from ganymede.kernel import params, result\n"
    "p = params()\n"
    "pathlib.Path(p['pid']).write_text(str(os.getpid()))\n"
    "while not os.path.exists(p['gate']):\n"
    "    time.sleep(0.02)\n"
    "result('gate', p['gate'])"
)
POSITIVE = "a positive number of seconds"
RUN_ALL = Grant(read=("",), run=("",), edit_self=True)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    served = tmp_path / "root"
    write_notebook(served / "journal" / "fremont.ipynb", code(COUNTER))
    write_notebook(served / "journal" / "gated.ipynb", code(GATED))
    write_notebook(served / "journal" / "broken.ipynb", code("1 / 0"))
    write_notebook(served / "private" / "p.ipynb", code(COUNTER))
    write_notebook(served / "index.ipynb", code("pass"))
    return served


class Runner:
    """The real headless runner, with what each run was ordered to do kept for the test."""

    def __init__(self) -> None:
        self.orders: list[RunOrder] = []
        self.started = asyncio.Condition()

    async def __call__(self, order: RunOrder) -> RunOutcome:
        async with self.started:
            self.orders.append(order)
            self.started.notify_all()
        return await run_for_host(order)

    async def wait_for_orders(self, count: int) -> None:
        async with self.started:
            await self.started.wait_for(lambda: len(self.orders) >= count)


@pytest.fixture
def runner() -> Runner:
    return Runner()


@pytest.fixture
def responder(
    root: Path, grants: Grants, runner: Runner, grant_store: GrantStore, file_ids: FileIdStore
) -> HostResponder:
    grant_index(grant_store, file_ids, NotebookGrant(run=("",)))
    return HostResponder(Notebooks(root), grants, run_notebook=runner)


def grant_index(grant_store: GrantStore, file_ids: FileIdStore, grant: NotebookGrant) -> None:
    """Set index.ipynb's own grant, as ``ganymede grant`` does; its kernel's next call has it."""
    grant_store.set(file_ids.index("index.ipynb"), grant, "index.ipynb")


def caller(depth: int = 0, kernel_id: str = "k1") -> Caller:
    """index.ipynb's kernel (its grant is read from the store), or a run ``depth`` deep."""
    return Caller(kernel_id, "index.ipynb", RUN_ALL, depth=depth)


async def refusal(responder: HostResponder, who: Caller, **params: Any) -> str:
    with pytest.raises(HostCallError) as failed:
        await responder.call(who, "notebooks.run", params)
    return str(failed.value)


async def test_a_run_returns_status_and_results(responder: HostResponder, runner: Runner) -> None:
    run = await responder.call(
        caller(),
        "notebooks.run",
        {"path": "journal/fremont.ipynb", "params": {"counter": "2nd Ave", "n": 21}},
    )
    assert run == {
        "status": "ok",
        "results": {"counter": "2nd Ave", "doubled": 42},
        "path": "journal/fremont.ipynb",
    }
    [order] = runner.orders
    run_caller = order.caller_of("k2")
    # the called notebook runs nothing by default: neither may the run's kernel
    run_grant = Grant(read=("",), run=(), edit_self=True)
    assert run_caller == Caller("k2", "journal/fremont.ipynb", run_grant, 1, self_calls=False)


async def test_a_failing_run_reports_its_error(responder: HostResponder) -> None:
    run = await responder.call(caller(), "notebooks.run", {"path": "journal/broken.ipynb"})
    assert (run["status"], run["results"]) == ("error", {})
    assert run["error"]["ename"] == "ZeroDivisionError"


async def test_running_needs_a_run_grant(
    responder: HostResponder, grants: Grants, grant_store: GrantStore, file_ids: FileIdStore
) -> None:
    grant_store.delete(file_ids.index("index.ipynb"))
    defaults = caller()
    assert "notebooks.run" not in (await responder.call(defaults, "hello", {}))["methods"]
    assert await refusal(responder, defaults, path="journal/fremont.ipynb") == (
        "denied: notebooks.run needs a run grant covering journal/fremont.ipynb"
    )
    grant_index(grant_store, file_ids, NotebookGrant(run=("journal",)))
    granted = caller()
    assert "notebooks.run" in (await responder.call(granted, "hello", {}))["methods"]
    assert await refusal(responder, granted, path="private/p.ipynb") == (
        "denied: notebooks.run needs a run grant covering private/p.ipynb"
    )
    run = await responder.call(granted, "notebooks.run", {"path": "journal/fremont.ipynb"})
    assert run["results"] == {"counter": "Fremont", "doubled": 2}


async def test_a_run_never_widens_its_callers_grant(
    responder: HostResponder,
    runner: Runner,
    grants: Grants,
    grant_store: GrantStore,
    file_ids: FileIdStore,
) -> None:
    called = "journal/fremont.ipynb"
    grant_store.set(file_ids.index(called), NotebookGrant(read=("",), run=("",)), called)
    grant_index(grant_store, file_ids, NotebookGrant(read=("journal",), run=("journal",)))
    await responder.call(caller(), "notebooks.run", {"path": called})
    assert runner.orders[0].caller_of("k2").grant == Grant(
        read=("journal",), run=("journal",), edit_self=True
    )


async def test_depth_four_is_denied(responder: HostResponder, runner: Runner) -> None:
    deep = caller(depth=3)
    assert "notebooks.run" not in (await responder.call(deep, "hello", {}))["methods"]
    assert await refusal(responder, deep, path="journal/fremont.ipynb") == (
        "denied: notebooks.run: a run 3 deep may not start another"
    )
    assert runner.orders == []
    third = await responder.call(
        caller(depth=2), "notebooks.run", {"path": "journal/fremont.ipynb"}
    )
    assert third["status"] == "ok"
    assert runner.orders[0].caller_of("k4").depth == 3


async def test_a_copy_needs_a_read_grant_too(
    responder: HostResponder, root: Path, grant_store: GrantStore, file_ids: FileIdStore
) -> None:
    grant_index(grant_store, file_ids, NotebookGrant(read=(), run=("journal",)))
    assert await refusal(responder, caller(), path="journal/fremont.ipynb", save="copy") == (
        "denied: notebooks.run needs a read grant covering journal/fremont.ipynb"
    )
    grant_index(grant_store, file_ids, NotebookGrant(run=("journal",)))
    run = await responder.call(
        caller(), "notebooks.run", {"path": "journal/fremont.ipynb", "save": "copy"}
    )
    assert run["copy"].startswith("runs/fremont-")
    saved = json.loads((root / run["copy"]).read_text())
    assert saved["metadata"]["ganymede"]["run"]["status"] == "ok"
    assert [o["output_type"] for o in saved["cells"][-1]["outputs"]] == ["display_data"] * 2
    assert not (root / "journal" / "fremont.ipynb").read_text().count("display_data")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"path": "journal/gated.ipynb", "save": True}, 'save must be false or "copy"'),
        ({"path": "journal/gated.ipynb", "params": [1]}, "params must be an object, not an array"),
        ({"path": "journal/gated.ipynb", "timeout": 0}, f"timeout must be {POSITIVE}"),
        ({"path": "journal/missing.ipynb"}, "journal/missing.ipynb: no such file or directory"),
    ],
)  # fmt: skip
async def test_bad_runs_fail_before_a_kernel_starts(
    responder: HostResponder, runner: Runner, params: dict[str, Any], message: str
) -> None:
    assert await refusal(responder, caller(), **params) == f"failed: notebooks.run: {message}"
    assert runner.orders == []


def gate_params(tmp_path: Path, name: str) -> dict[str, Any]:
    return {"pid": str(tmp_path / f"{name}.pid"), "gate": str(tmp_path / f"{name}.gate")}


async def test_a_third_run_waits_for_a_slot(
    responder: HostResponder, runner: Runner, tmp_path: Path
) -> None:
    gated = [gate_params(tmp_path, name) for name in ("a", "b", "c")]
    calls = [
        asyncio.ensure_future(
            responder.call(
                caller(), "notebooks.run", {"path": "journal/gated.ipynb", "params": params}
            )
        )
        for params in gated
    ]
    await runner.wait_for_orders(2)
    # another kernel's runs have slots of their own
    other = await responder.call(
        caller(kernel_id="k2"), "notebooks.run", {"path": "journal/fremont.ipynb"}
    )
    assert other["status"] == "ok"
    assert [order.params for order in runner.orders[:2]] == gated[:2]
    assert len(runner.orders) == 3 and runner.orders[2].params == {}
    Path(gated[0]["gate"]).touch()
    first = await calls[0]
    assert first["results"] == {"gate": gated[0]["gate"]}
    await runner.wait_for_orders(4)
    assert runner.orders[3].params == gated[2]
    for params in gated[1:]:
        Path(params["gate"]).touch()
    assert [(await call)["status"] for call in calls[1:]] == ["ok", "ok"]


async def test_cancelling_a_call_shuts_its_runs_kernel_down(
    responder: HostResponder, runner: Runner, tmp_path: Path
) -> None:
    params = gate_params(tmp_path, "cancelled")
    os.mkfifo(params["pid"])  # reading it waits for the kernel to write its pid
    call = asyncio.ensure_future(
        responder.call(caller(), "notebooks.run", {"path": "journal/gated.ipynb", "params": params})
    )
    pid = int(await asyncio.to_thread(Path(params["pid"]).read_text))  # once the cell runs
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_release_cancels_a_kernels_runs(
    responder: HostResponder, runner: Runner, tmp_path: Path
) -> None:
    params = gate_params(tmp_path, "released")
    call = asyncio.ensure_future(
        responder.call(caller(), "notebooks.run", {"path": "journal/gated.ipynb", "params": params})
    )
    await runner.wait_for_orders(1)
    await responder.release("k1")
    with pytest.raises(asyncio.CancelledError):
        await call


async def test_a_run_past_its_timeout_is_stopped(
    responder: HostResponder, runner: Runner, tmp_path: Path
) -> None:
    params = gate_params(tmp_path, "slow")  # never opened: the cell waits until the deadline
    os.mkfifo(params["pid"])
    call = asyncio.ensure_future(
        responder.call(
            caller(),
            "notebooks.run",
            {"path": "journal/gated.ipynb", "params": params, "timeout": 2},
        )
    )
    pid = int(await asyncio.to_thread(Path(params["pid"]).read_text))
    with pytest.raises(HostCallError) as failed:
        await call
    assert str(failed.value) == (
        "timeout: notebooks.run: the run took longer than 2 s; its kernel was shut down"
    )
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_the_runner_gives_a_requests_kernel_its_host_while_cells_run(
    root: Path,
) -> None:
    seen: list[tuple[str, bool]] = []

    @contextlib.asynccontextmanager
    async def host(manager: AsyncKernelManager, kernel_id: str) -> AsyncIterator[None]:
        seen.append((f"entered {len(kernel_id)}", await manager.is_alive()))
        yield
        seen.append(("left", await manager.is_alive()))

    path = root / "journal" / "fremont.ipynb"
    notebook = json.loads(path.read_text())
    outcome = await run_notebook(RunRequest(path=path, notebook=notebook, host=host))
    assert outcome.status == "ok"
    assert seen == [("entered 32", True), ("left", True)]  # the kernel dies only after
