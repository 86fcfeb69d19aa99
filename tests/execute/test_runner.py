"""The runner on real ipykernel kernels: parameters, results, failures, outputs, kernels."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from ganymede.errors import UsageError
from ganymede.execute import RunEvent, RunOutcome, run_notebook, run_notebooks
from tests.execute.notebooks import notebook, request, texts

RESULT_PID = "from ganymede.kernel import result\nimport os\nresult('pid', os.getpid())"


def process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def child_pids() -> set[int]:
    """This process's children (kernels included), from Linux's /proc."""
    return {
        int(pid)
        for children in Path("/proc/self/task").glob("*/children")
        for pid in children.read_text().split()
    }


def assert_valid(outcome: RunOutcome) -> None:
    nbformat.validate(nbformat.from_dict(json.loads(json.dumps(outcome.notebook))))


async def test_params_reach_the_environment_and_the_injected_cell(tmp_path: Path) -> None:
    params = {"alpha": [1, {"b": None}], "flag": True, "label": "x"}
    nb = notebook(
        ("alpha = 0\nflag = False\nlabel = ''", ["parameters"]),
        "from ganymede.kernel import params, result\n"
        "result('alpha', alpha)\nresult('flag', flag)\nresult('env', params())",
    )
    outcome = await run_notebook(request(tmp_path, nb, params=params))
    assert outcome.status == "ok", outcome.error
    assert outcome.results == {"alpha": [1, {"b": None}], "flag": True, "env": params}
    injected = outcome.notebook["cells"][1]
    assert injected["metadata"]["tags"] == ["injected-parameters"]
    assert (
        injected["source"] == "# Parameters\nalpha = [1, {'b': None}]\nflag = True\nlabel = 'x'\n"
    )
    assert injected["execution_count"] == 2
    run = outcome.notebook["metadata"]["ganymede"]["run"]
    assert (run["params"], run["status"], run["kernel"]) == (params, "ok", "python3")
    assert "error" not in run
    assert outcome.notebook["metadata"]["papermill"] == {"parameters": params}
    assert outcome.warnings == []
    assert_valid(outcome)


async def test_no_inject_keeps_the_notebook_and_still_passes_params(tmp_path: Path) -> None:
    nb = notebook(
        ("a = 0", ["parameters"]),
        "from ganymede.kernel import params, result\nresult('a', a)\nresult('env', params())",
    )
    outcome = await run_notebook(request(tmp_path, nb, params={"a": 9}, inject=False))
    assert outcome.results == {"a": 0, "env": {"a": 9}}
    assert len(outcome.notebook["cells"]) == 2


async def test_result_and_scrapbook_glue_are_typed_results(tmp_path: Path) -> None:
    nb = notebook(
        "from ganymede.kernel import result\nresult('table', {'rows': [1, 2]})\nresult('n', 1.5)",
        "import scrapbook as sb\nsb.glue('text', 'hello')\nsb.glue('number', 3)\n"
        "sb.glue('listed', [1, 'a'])",
        "result('n', 2)",
    )
    outcome = await run_notebook(request(tmp_path, nb))
    assert outcome.status == "ok", outcome.error
    assert outcome.results == {
        "table": {"rows": [1, 2]},
        "text": "hello",
        "number": 3,
        "listed": [1, "a"],
        "n": 2,
    }
    shown = outcome.notebook["cells"][0]["outputs"][0]["data"]["text/plain"]
    assert shown == 'result table: {"rows": [1, 2]}'


async def test_a_raising_cell_stops_the_run_with_its_place_and_traceback(tmp_path: Path) -> None:
    nb = notebook(
        "from ganymede.kernel import result\nresult('before', 1)\nprint('ran')",
        "print('partial')\nraise ValueError('bad value')",
        "result('after', 2)",
    )
    nb["cells"][2]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "stale\n"}]
    nb["cells"][2]["execution_count"] = 9
    outcome = await run_notebook(request(tmp_path, nb))
    assert outcome.status == "error"
    error = outcome.error
    assert error is not None
    assert (error["cell_index"], error["cell_id"]) == (1, nb["cells"][1]["id"])
    assert (error["ename"], error["evalue"]) == ("ValueError", "bad value")
    assert any("bad value" in line for line in error["traceback"])
    cells = outcome.notebook["cells"]
    assert texts(cells[0])[-1] == "stdout:ran\n"
    assert texts(cells[1]) == ["stdout:partial\n", "error:ValueError"]
    assert (cells[2]["outputs"], cells[2]["execution_count"]) == ([], None)
    assert outcome.results == {"before": 1}
    assert nb["cells"][2]["execution_count"] == 9, "the request's notebook is left as it was"
    run = outcome.notebook["metadata"]["ganymede"]["run"]
    assert run["status"] == "error"
    assert run["error"]["ename"] == "ValueError"
    assert_valid(outcome)


async def test_allow_errors_runs_on(tmp_path: Path) -> None:
    nb = notebook("1 / 0", "print('still here')")
    outcome = await run_notebook(request(tmp_path, nb, allow_errors=True))
    assert outcome.status == "ok"
    assert outcome.error is None
    assert texts(outcome.notebook["cells"][1]) == ["stdout:still here\n"]
    assert len(outcome.warnings) == 1
    assert "cell 0" in outcome.warnings[0]
    assert "ZeroDivisionError" in outcome.warnings[0]


async def test_nbclient_tags_raises_exception_and_skip_execution(tmp_path: Path) -> None:
    nb = notebook(
        ("1 / 0", ["raises-exception"]), ("print('skipped')", ["skip-execution"]), "print('next')"
    )
    outcome = await run_notebook(request(tmp_path, nb))
    assert outcome.status == "ok"
    cells = outcome.notebook["cells"]
    assert texts(cells[0]) == ["error:ZeroDivisionError"]
    assert (cells[1]["outputs"], cells[1]["execution_count"]) == ([], None)
    assert texts(cells[2]) == ["stdout:next\n"]


async def test_input_raises_instead_of_hanging(tmp_path: Path) -> None:
    outcome = await run_notebook(request(tmp_path, notebook("input('name? ')")))
    assert outcome.status == "error"
    assert outcome.error is not None
    assert outcome.error["ename"] == "StdinNotImplementedError"
    assert "input" in outcome.error["evalue"]


async def test_a_cell_past_its_timeout_is_interrupted(tmp_path: Path) -> None:
    nb = notebook("print('first')", "import time\nprint('sleeping')\ntime.sleep(60)", "print(3)")
    outcome = await run_notebook(request(tmp_path, nb, timeout=1.0))
    assert outcome.status == "timeout"
    assert outcome.error is not None
    assert outcome.error["cell_index"] == 1
    assert outcome.error["message"] == f"cell 1 (id {nb['cells'][1]['id']}) ran longer than 1 s"
    cells = outcome.notebook["cells"]
    assert texts(cells[1]) == ["stdout:sleeping\n"]
    assert cells[2]["execution_count"] is None


async def test_a_kernel_that_exits_mid_run_is_dead(tmp_path: Path) -> None:
    nb = notebook(RESULT_PID + "\nprint('before')", "import os\nos._exit(1)", "print(3)")
    outcome = await run_notebook(request(tmp_path, nb))
    assert outcome.status == "dead"
    assert outcome.error is not None
    assert outcome.error["cell_index"] == 1
    assert outcome.error["message"].startswith("the kernel died (exit code 1) while running cell 1")
    assert texts(outcome.notebook["cells"][0])[-1] == "stdout:before\n"
    assert process_gone(outcome.results["pid"])


@pytest.mark.parametrize("last_cell", ["print('done')", "import os\nos._exit(1)"])
async def test_a_finished_kernels_process_group_gets_no_signal_once_it_has_exited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, last_cell: str
) -> None:
    """Its number is free by then, and may be another program's group on a busy machine."""
    sent: list[tuple[int, bool]] = []  # each signalled group, and whether it was still ours
    send = os.killpg

    def recorded(group: int, signal_number: int) -> None:
        sent.append((group, group in child_pids()))  # a zombie is still one
        send(group, signal_number)

    monkeypatch.setattr(os, "killpg", recorded)
    outcome = await run_notebook(request(tmp_path, notebook(RESULT_PID, last_cell)))
    assert outcome.status in ("ok", "dead")
    kernel = outcome.results["pid"]
    assert process_gone(kernel)
    assert [entry for entry in sent if entry[0] == kernel] in ([], [(kernel, True)])


async def test_stream_coalescing_on_a_real_kernel(tmp_path: Path) -> None:
    source = (
        "import sys\n"
        "for i in range(3):\n    print(i, flush=True)\n"
        "print('warn', file=sys.stderr, flush=True)\n"
        "for i in range(3):\n    print(f'{i}0%', end='\\r', flush=True)\n"
        "print('done')"
    )
    outcome = await run_notebook(request(tmp_path, notebook(source)))
    assert texts(outcome.notebook["cells"][0]) == [
        "stdout:0\n1\n2\n",
        "stderr:warn\n",
        "stdout:done\n",
    ]


async def test_clear_output_wait_on_a_real_kernel(tmp_path: Path) -> None:
    source = (
        "from IPython.display import clear_output\n"
        "for frame in range(3):\n"
        "    clear_output(wait=True)\n"
        "    print(f'frame {frame}', flush=True)"
    )
    outcome = await run_notebook(request(tmp_path, notebook(source)))
    assert texts(outcome.notebook["cells"][0]) == ["stdout:frame 2\n"]


async def test_update_display_reaches_earlier_cells(tmp_path: Path) -> None:
    nb = notebook(
        "handle = display('first', display_id=True)",
        "display('unrelated')\nhandle.update('second')",
    )
    outcome = await run_notebook(request(tmp_path, nb))
    cells = outcome.notebook["cells"]
    assert texts(cells[0]) == ["'second'"]
    assert texts(cells[1]) == ["'unrelated'"]
    assert_valid(outcome)


async def test_cwd_is_the_notebooks_directory_or_the_one_asked(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    nb = notebook("from ganymede.kernel import result\nimport os\nresult('cwd', os.getcwd())")
    before = os.getcwd()
    default, chosen = await run_notebooks(
        [request(home, nb), request(home, nb, name="b.ipynb", cwd=elsewhere)]
    )
    assert default.results["cwd"] == str(home.resolve())
    assert chosen.results["cwd"] == str(elsewhere.resolve())
    assert os.getcwd() == before


async def test_no_kernelspec_runs_on_python3_with_a_warning(tmp_path: Path) -> None:
    outcome = await run_notebook(request(tmp_path, notebook("1 + 1", kernelspec=None)))
    assert outcome.status == "ok"
    assert outcome.warnings == [f"no kernelspec in {tmp_path / 'run.ipynb'}: running on python3"]
    assert outcome.notebook["metadata"]["kernelspec"]["name"] == "python3"
    assert outcome.notebook["metadata"]["language_info"]["name"] == "python"


async def test_an_unknown_kernel_is_dead_and_names_the_choices(tmp_path: Path) -> None:
    events: list[RunEvent] = []
    nb = notebook("1", kernelspec={"name": "nope", "display_name": "Nope", "language": "x"})
    outcome = await run_notebook(request(tmp_path, nb), on_event=events.append)
    assert outcome.status == "dead"
    assert outcome.error is not None
    message = outcome.error["message"]
    assert message.startswith("no such kernel: nope (available: ")
    assert "python3" in message
    assert [event.kind for event in events] == ["started", "finished"]


async def test_the_requested_kernel_wins_over_the_notebooks(tmp_path: Path) -> None:
    nb = notebook("1", kernelspec={"name": "nope", "display_name": "Nope", "language": "x"})
    outcome = await run_notebook(request(tmp_path, nb, kernel_name="python3"))
    assert outcome.status == "ok"
    assert outcome.notebook["metadata"]["ganymede"]["run"]["kernel"] == "python3"


def install_kernelspec(jupyter_home: Path, name: str, argv: list[str], language: str) -> None:
    directory = jupyter_home / "data" / "kernels" / name
    directory.mkdir(parents=True)
    spec = {"argv": argv, "display_name": name, "language": language}
    (directory / "kernel.json").write_text(json.dumps(spec))


async def test_a_kernel_that_never_answers_is_dead_after_the_startup_timeout(
    tmp_path: Path, isolated_jupyter: Path
) -> None:
    silent = [sys.executable, "-c", "import time; time.sleep(60)", "{connection_file}"]
    install_kernelspec(isolated_jupyter, "silent", silent, "python")
    nb = notebook("1")
    outcome = await run_notebook(request(tmp_path, nb, kernel_name="silent", startup_timeout=0.5))
    assert outcome.status == "dead"
    assert outcome.error == {"message": "kernel silent did not answer within 0.5 s of starting"}


async def test_a_kernel_that_exits_at_start_is_dead(tmp_path: Path, isolated_jupyter: Path) -> None:
    failing = [sys.executable, "-c", "raise SystemExit(3)", "{connection_file}"]
    install_kernelspec(isolated_jupyter, "failing", failing, "python")
    outcome = await run_notebook(request(tmp_path, notebook("1"), kernel_name="failing"))
    assert outcome.status == "dead"
    assert outcome.error == {"message": "kernel failing exited while starting (exit code 3)"}


async def test_other_languages_get_params_but_no_injected_cell(
    tmp_path: Path, isolated_jupyter: Path
) -> None:
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    install_kernelspec(isolated_jupyter, "other", argv, "other")
    nb = notebook(
        ("a = 0", ["parameters"]),
        "from ganymede.kernel import params, result\nresult('env', params())",
    )
    outcome = await run_notebook(request(tmp_path, nb, kernel_name="other", params={"a": 1}))
    assert outcome.status == "ok", outcome.error
    assert outcome.results == {"env": {"a": 1}}
    assert len(outcome.notebook["cells"]) == 2


async def test_ipython_kernels_under_any_name_keep_history_in_memory(
    tmp_path: Path, isolated_jupyter: Path
) -> None:
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    install_kernelspec(isolated_jupyter, "analysis-env", argv, "python")
    nb = notebook("print(get_ipython().history_manager.hist_file)")
    outcome = await run_notebook(request(tmp_path, nb, kernel_name="analysis-env"))
    assert outcome.status == "ok", outcome.error
    assert texts(outcome.notebook["cells"][0]) == ["stdout::memory:\n"]


async def test_a_notebook_before_4_5_stays_valid(tmp_path: Path) -> None:
    nb = notebook(("a = 0", ["parameters"]), "print(a)", minor=4)
    outcome = await run_notebook(request(tmp_path, nb, params={"a": 1}))
    assert outcome.status == "ok"
    assert outcome.notebook["nbformat_minor"] == 4
    assert all("id" not in cell for cell in outcome.notebook["cells"])
    assert texts(outcome.notebook["cells"][2]) == ["stdout:1\n"]
    assert_valid(outcome)


async def test_malformed_params_are_refused_before_any_kernel_starts(tmp_path: Path) -> None:
    nb = notebook(("a = 0", ["parameters"]))
    with pytest.raises(UsageError, match="not a Python name"):
        await run_notebook(request(tmp_path, nb, params={"not-a-name": 1}))
    with pytest.raises(UsageError, match="JSON"):
        await run_notebook(request(tmp_path, nb, params={"a": {1, 2}}))


async def test_events_tell_the_progress(tmp_path: Path) -> None:
    events: list[RunEvent] = []
    nb = notebook("1", "2")
    nb["cells"].insert(1, nbformat.v4.new_markdown_cell("text"))
    outcome = await run_notebook(request(tmp_path, nb), on_event=events.append)
    progress = [event for event in events if event.kind != "output"]
    assert [(e.kind, e.cell_index, e.cell_count) for e in progress] == [
        ("started", None, 3),
        ("running", 0, 3),
        ("cell", 0, 3),
        ("running", 2, 3),
        ("cell", 2, 3),
        ("finished", None, 3),
    ]
    assert [e.source for e in progress if e.kind == "running"] == ["1", "2"]
    assert events[-1].outcome is outcome
    results = [
        (event.cell_index, event.output[1]["data"]["text/plain"])
        for event in events
        if event.output is not None and event.output[0] == "execute_result"
    ]
    assert results == [(0, "1"), (2, "2")]
    first_output = next(i for i, event in enumerate(events) if event.kind == "output")
    assert events[first_output - 1].kind == "running"  # outputs arrive before their cell ends


async def test_parallel_runs_overlap_and_leave_no_kernel_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    events: list[tuple[str, str]] = []
    children_before = child_pids()
    nb = notebook(RESULT_PID, "print('hi')")
    requests = [request(tmp_path, nb, name=f"nb{i}.ipynb") for i in range(6)]
    outcomes = await run_notebooks(
        requests, jobs=2, on_event=lambda e: events.append((e.kind, e.request.path.name))
    )
    assert [o.status for o in outcomes] == ["ok"] * 6
    assert [o.request for o in outcomes] == requests
    pids = {o.results["pid"] for o in outcomes}
    assert len(pids) == 6, "every notebook gets its own kernel"
    assert all(process_gone(pid) for pid in pids)
    assert child_pids() == children_before
    assert events.index(("started", "nb1.ipynb")) < events.index(("finished", "nb0.ipynb"))
    assert not list(tmp_path.glob("ganymede-kernel-*")), "connection files are removed"


async def test_a_cancelled_run_leaves_no_kernel_behind(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    nb = notebook(
        f"import os\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))",
        "import time\ntime.sleep(60)",
    )
    first_cell_done = asyncio.Event()

    def on_event(event: RunEvent) -> None:
        if event.kind == "cell":
            first_cell_done.set()

    children_before = child_pids()
    run = asyncio.ensure_future(run_notebooks([request(tmp_path, nb)] * 3, on_event=on_event))
    await first_cell_done.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert process_gone(int(pid_file.read_text()))
    assert child_pids() == children_before, "the kernel warming for the next run is gone too"


async def test_queue_warms_the_next_kernel_and_kills_what_is_left(tmp_path: Path) -> None:
    from ganymede.execute import NotebookQueue

    first = request(tmp_path, notebook(RESULT_PID), name="first.ipynb")
    second = request(tmp_path, notebook(RESULT_PID), name="second.ipynb")
    third = request(tmp_path, notebook(RESULT_PID), name="third.ipynb")
    before = child_pids()
    queue = NotebookQueue()
    try:
        ran_first = await queue.run(first, then=[second])
        assert ran_first.status == "ok", ran_first.error
        warmed = child_pids() - before - {ran_first.results["pid"]}
        assert len(warmed) == 1  # the second notebook's kernel, started before its run
        ran_second = await queue.run(second, then=[third])
        assert ran_second.results["pid"] in warmed
    finally:
        await queue.aclose()
    assert child_pids() - before == set()  # the third's kernel, warmed for nothing, is gone


async def test_queue_runs_a_request_it_did_not_warm(tmp_path: Path) -> None:
    from ganymede.execute import NotebookQueue

    warmed = request(tmp_path, notebook("x = 1"), name="warmed.ipynb")
    other = request(tmp_path, notebook(RESULT_PID), name="other.ipynb")
    before = child_pids()
    queue = NotebookQueue()
    try:
        await queue.run(request(tmp_path, notebook("x = 1")), then=[warmed])
        outcome = await queue.run(other)
        assert outcome.status == "ok", outcome.error
    finally:
        await queue.aclose()
    assert child_pids() - before == set()
