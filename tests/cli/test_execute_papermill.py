"""papermill's habits under ``ganymede execute``: its spellings, typing and file conventions.

Each test runs real processes on real ipykernel kernels; where papermill's answer is the
reference, papermill itself runs the same notebook with the same flags in the same test.
"""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_execute import code, ganymede, json_lines, write_notebook

pytestmark = pytest.mark.slow

PAPERMILL = Path(sys.executable).parent / "papermill"
SHOW_PARAMETERS = (
    "import json\n"
    "print(json.dumps({name: [type(value).__name__, value] for name, value in [\n"
    "    ('flag', flag), ('n', n), ('x', x), ('s', s), ('none', none), ('lst', lst)]}))"
)


def papermill(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PAPERMILL), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def printed(path: Path, cell_index: int) -> Any:
    """The JSON a cell printed, read back from the notebook file."""
    [output] = json.loads(path.read_text())["cells"][cell_index]["outputs"]
    text = output["text"]
    return json.loads("".join(text) if isinstance(text, list) else text)


def test_papermills_flags_give_papermills_values(tmp_path: Path) -> None:
    write_notebook(
        tmp_path / "nb.ipynb",
        code("flag = False\nn = 0\nx = 0.0\ns = ''\nnone = 'x'\nlst = []", "parameters"),
        code(SHOW_PARAMETERS),
    )
    flags = ["-p", "flag", "True", "-p", "n", "3", "-p", "x", "1.5", "-p", "s", "hello"]
    flags += ["-p", "none", "None", "-p", "lst", "[1,2]"]
    ours = ganymede("nb.ipynb", "-o", "ours.ipynb", *flags, cwd=tmp_path)
    assert ours.returncode == 0, ours.stderr
    theirs = papermill("nb.ipynb", "theirs.ipynb", *flags, cwd=tmp_path)
    assert theirs.returncode == 0, theirs.stderr
    # the injected cell sits after the parameters cell in both
    ours_seen = printed(tmp_path / "ours.ipynb", 2)
    theirs_seen = printed(tmp_path / "theirs.ipynb", 2)
    assert ours_seen.pop("lst") == ["list", [1, 2]]  # a JSON literal: ours types it
    assert theirs_seen.pop("lst") == ["str", "[1,2]"]
    assert ours_seen == theirs_seen
    assert ours_seen == {
        "flag": ["bool", True],
        "n": ["int", 3],
        "x": ["float", 1.5],
        "s": ["str", "hello"],
        "none": ["NoneType", None],
    }


def test_raw_yaml_base64_and_yaml_files(tmp_path: Path) -> None:
    write_notebook(
        tmp_path / "nb.ipynb",
        code("a = b = c = d = e = None", "parameters"),
        code("from ganymede.kernel import result\nresult('seen', [a, b, c, d, e])"),
    )
    (tmp_path / "p.yaml").write_text("a: [1, two]\nb: from-file\n")
    encoded = base64.b64encode(b"c: {k: 1}").decode()
    flags = ["-f", "p.yaml", "-y", "b: from-yaml\nd: 2.5", "-b", encoded, "-r", "e", "007"]
    done = ganymede("nb.ipynb", *flags, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [line] = json_lines(done.stdout)
    assert line["results"] == {"seen": [[1, "two"], "from-yaml", {"k": 1}, 2.5, "007"]}


def test_two_word_values_are_never_taken_for_notebooks(tmp_path: Path) -> None:
    write_notebook(
        tmp_path / "nb.ipynb",
        code("name = ''", "parameters"),
        code("from ganymede.kernel import result\nresult('name', name)"),
    )
    done = ganymede(
        "nb.ipynb", "-o", "out.ipynb", "-p", "name", "other.ipynb", "--json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    [line] = json_lines(done.stdout)
    assert line["results"] == {"name": "other.ipynb"}
    assert line["output"] == "out.ipynb"


def test_an_unknown_parameter_warns(tmp_path: Path) -> None:
    write_notebook(tmp_path / "nb.ipynb", code("alpha = 1", "parameters"), code("alpha"))
    done = ganymede("nb.ipynb", "-p", "alpah", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "passed unknown parameter 'alpah': the parameters cell does not set it" in done.stderr
    assert "alpha" not in done.stderr.replace("alpah", "")


def test_no_parameters_cell_injects_at_the_top_as_papermill_does(tmp_path: Path) -> None:
    write_notebook(tmp_path / "nb.ipynb", code("print(n)"))
    ours = ganymede("nb.ipynb", "-o", "ours.ipynb", "-p", "n", "3", cwd=tmp_path)
    assert ours.returncode == 0, ours.stderr
    assert "no cell is tagged 'parameters': the parameters are injected at the top" in ours.stderr
    theirs = papermill("nb.ipynb", "theirs.ipynb", "-p", "n", "3", cwd=tmp_path)
    assert theirs.returncode == 0, theirs.stderr
    for name in ("ours.ipynb", "theirs.ipynb"):
        first, second = json.loads((tmp_path / name).read_text())["cells"]
        assert first["metadata"]["tags"] == ["injected-parameters"]
        assert second["outputs"][0]["text"] in ("3\n", ["3\n"])


def test_scrapbook_reads_the_parameters(tmp_path: Path) -> None:
    import scrapbook

    write_notebook(
        tmp_path / "nb.ipynb",
        code("n = 0\nlabel = ''", "parameters"),
        code("import scrapbook as sb\nsb.glue('twice', n * 2)"),
    )
    done = ganymede("nb.ipynb", "-p", "n", "21", "-p", "label=x", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    read = scrapbook.read_notebook(str(tmp_path / "nb.ipynb"))
    assert read.parameters == {"n": 21, "label": "x"}
    assert read.scraps["twice"].data == 42


def notebook_on_kernel(path: Path, kernel_name: str) -> Path:
    """A notebook on ``kernel_name`` whose cell holds a stale output from an earlier run."""
    cell = {**code("print('fresh')"), "execution_count": 7}
    cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "stale\n"}]
    write_notebook(path, cell)
    notebook = json.loads(path.read_text())
    notebook["metadata"]["kernelspec"] = {
        "name": kernel_name,
        "display_name": kernel_name,
        "language": "python",
    }
    path.write_text(json.dumps(notebook, indent=1))
    return path


def test_a_kernel_that_cannot_start_writes_nothing(tmp_path: Path) -> None:
    path = notebook_on_kernel(tmp_path / "nb.ipynb", "no-such-kernel")
    before = path.read_bytes()
    in_place = ganymede("nb.ipynb", "--json", cwd=tmp_path)
    assert in_place.returncode == 4
    assert "no such kernel: no-such-kernel" in in_place.stderr
    assert json_lines(in_place.stdout)[0]["output"] is None
    elsewhere = ganymede("nb.ipynb", "-o", "out.ipynb", cwd=tmp_path)
    assert elsewhere.returncode == 4
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nb.ipynb"]


def test_a_kernelspec_named_python_runs_on_the_native_kernel(tmp_path: Path) -> None:
    path = notebook_on_kernel(tmp_path / "nb.ipynb", "python")
    done = ganymede("nb.ipynb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [cell] = json.loads(path.read_text())["cells"]
    assert cell["outputs"][0]["text"] in ("fresh\n", ["fresh\n"])
    assert json.loads(path.read_text())["metadata"]["kernelspec"]["name"] == "python"


def test_sys_exit_0_stops_cleanly_as_papermill_does(tmp_path: Path) -> None:
    path = write_notebook(
        tmp_path / "nb.ipynb",
        code("print('ran')"),
        code("import sys\nsys.exit(0)"),
        code("print('never')"),
    )
    done = ganymede("nb.ipynb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "cell 1 (id cell-1) stopped the run with SystemExit(0)" in done.stderr
    first, second, third = json.loads(path.read_text())["cells"]
    assert first["outputs"][0]["text"] in ("ran\n", ["ran\n"])
    assert "SystemExit" in [output.get("ename") for output in second["outputs"]]
    assert third["outputs"] == [] and third["execution_count"] is None
    theirs = papermill("nb.ipynb", "theirs.ipynb", cwd=tmp_path)
    assert theirs.returncode == 0, theirs.stderr
    assert json.loads((tmp_path / "theirs.ipynb").read_text())["cells"][2]["outputs"] == []


def test_exit_and_a_nonzero_sys_exit(tmp_path: Path) -> None:
    write_notebook(tmp_path / "quit.ipynb", code("exit()"), code("print('never')"))
    stopped = ganymede("quit.ipynb", cwd=tmp_path)
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads((tmp_path / "quit.ipynb").read_text())["cells"][1]["outputs"] == []
    write_notebook(tmp_path / "fail.ipynb", code("import sys\nsys.exit(3)"))
    failed = ganymede("fail.ipynb", cwd=tmp_path)
    assert failed.returncode == 1
    assert "raised SystemExit: 3" in failed.stderr


def run_until_saved(
    tmp_path: Path, done_when: Callable[[list[dict[str, Any]]], bool], *args: str
) -> list[dict[str, Any]]:
    """Start ``ganymede execute nb.ipynb``, wait until the file on disk satisfies ``done_when``,
    SIGKILL the process, and return the cells the file holds then."""
    path = tmp_path / "nb.ipynb"
    before = path.read_text()
    process = subprocess.Popen(
        [sys.executable, "-m", "ganymede", "execute", "nb.ipynb", *args],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and process.poll() is None:
            text = path.read_text()
            if text != before and done_when(json.loads(text)["cells"]):
                break
            time.sleep(0.05)
        assert process.poll() is None, process.communicate()[1]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    notebook = json.loads(path.read_text())  # whole: every save was atomic
    return notebook["cells"]


def test_a_killed_run_leaves_the_cells_it_finished(tmp_path: Path) -> None:
    write_notebook(
        tmp_path / "nb.ipynb",
        code("print('one')"),
        code("print('two')"),
        code("import time\ntime.sleep(60)"),
        code("print('never')"),
    )

    def second_cell_saved(cells: list[dict[str, Any]]) -> bool:
        return bool(cells[1]["outputs"])

    cells = run_until_saved(tmp_path, second_cell_saved)
    assert [cell["execution_count"] for cell in cells] == [1, 2, None, None]
    assert [texts(cell) for cell in cells] == [["one\n"], ["two\n"], [], []]


def test_a_long_cell_is_saved_while_it_prints(tmp_path: Path) -> None:
    write_notebook(
        tmp_path / "nb.ipynb",
        code(
            "import time\n"
            "for n in range(3000):\n"
            "    print('tick', n, flush=True)\n"
            "    time.sleep(0.02)"
        ),
    )

    def ticks_saved(cells: list[dict[str, Any]]) -> bool:
        return "tick 1\n" in "".join(texts(cells[0]))

    [cell] = run_until_saved(tmp_path, ticks_saved, "--autosave-every", "0.2")
    [printed] = texts(cell)
    assert printed.startswith("tick 0\ntick 1\n")


def test_no_autosave_writes_only_at_the_end(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "nb.ipynb", code("print('one')"), code("print('two')"))
    done = ganymede("nb.ipynb", "--no-autosave", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [texts(cell) for cell in json.loads(path.read_text())["cells"]] == [["one\n"], ["two\n"]]


def texts(cell: dict[str, Any]) -> list[str]:
    """The text of each stream output of a cell, joined as nbformat splits it."""
    return [
        "".join(output["text"]) if isinstance(output["text"], list) else output["text"]
        for output in cell["outputs"]
        if output["output_type"] == "stream"
    ]


def test_prepare_only_injects_and_writes_but_runs_nothing(tmp_path: Path) -> None:
    path = write_notebook(
        tmp_path / "nb.ipynb",
        code("n = 0", "parameters"),
        code("open('ran', 'w').close()\nprint(n)"),
    )
    done = ganymede("nb.ipynb", "--prepare-only", "-p", "n", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "ran").exists()
    cells = json.loads(path.read_text())["cells"]
    assert [cell["metadata"].get("tags") for cell in cells] == [
        ["parameters"],
        ["injected-parameters"],
        None,
    ]
    assert cells[1]["source"] in ("# Parameters\nn = 3\n", ["# Parameters\n", "n = 3\n"])
    assert all(cell["outputs"] == [] for cell in cells)
    assert json.loads(path.read_text())["metadata"]["papermill"] == {"parameters": {"n": 3}}


def test_a_notebook_from_stdin_goes_to_stdout_or_to_o(tmp_path: Path) -> None:
    source = write_notebook(tmp_path / "nb.ipynb", code("print('piped')")).read_text()

    def piped(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ganymede", "execute", "-", *args],
            input=source,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=90,
        )

    to_stdout = piped()
    assert to_stdout.returncode == 0, to_stdout.stderr
    assert json.loads(to_stdout.stdout)["cells"][0]["outputs"][0]["text"] == ["piped\n"]
    to_file = piped("-o", "out.ipynb")
    assert to_file.returncode == 0, to_file.stderr
    assert json.loads((tmp_path / "out.ipynb").read_text())["cells"][0]["outputs"]
    with_json = piped("--json")
    assert with_json.returncode == 2
    assert "input - goes to stdout, as --json does" in with_json.stderr


def test_log_output_streams_outputs_to_stderr(tmp_path: Path) -> None:
    write_notebook(tmp_path / "a.ipynb", code("print('from a')"), code("6 * 7"))
    write_notebook(tmp_path / "b.ipynb", code("print('from b', end='')"))
    one = ganymede("a.ipynb", "--log-output", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    assert "from a\n42\n" in one.stderr
    both = ganymede("a.ipynb", "b.ipynb", "--log-output", "-j", "2", cwd=tmp_path)
    assert both.returncode == 0, both.stderr
    lines = both.stderr.splitlines()
    assert {"a.ipynb: from a", "a.ipynb: 42", "b.ipynb: from b"} <= set(lines)
