"""``ganymede execute`` end to end: a real process, real ipykernel kernels, real files."""

from __future__ import annotations

import itertools
import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

PYTHON3 = {"display_name": "Python 3", "language": "python", "name": "python3"}


def code(source: str, *tags: str) -> dict[str, Any]:
    metadata = {"tags": list(tags)} if tags else {}
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": metadata,
        "outputs": [],
        "source": source,
    }


def write_notebook(path: Path, *cells: dict[str, Any], kernelspec: bool = True) -> Path:
    numbered = [{**cell, "id": f"cell-{n}"} for n, cell in enumerate(cells)]
    notebook = {
        "cells": numbered,
        "metadata": {"kernelspec": PYTHON3} if kernelspec else {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook, indent=1))
    return path


def ganymede(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ganymede", "execute", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )


def json_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def outputs_of(path: Path) -> list[list[dict[str, Any]]]:
    return [cell.get("outputs", []) for cell in json.loads(path.read_text())["cells"]]


def test_params_in_and_named_results_out(tmp_path: Path) -> None:
    write_notebook(
        tmp_path / "report.ipynb",
        code("counter = '1st'\nn = 1", "parameters"),
        code(
            "import json, os\n"
            "from ganymede.kernel import params, result\n"
            "result('seen', json.loads(os.environ['GANYMEDE_PARAMS']))\n"
            "result('rows', n * 100)\n"
            "result('label', f'{counter}:{n}')\n"
            "assert params() == {'counter': '2nd', 'n': 3}"
        ),
        code("import scrapbook as sb\nsb.glue('glued', {'total': n + 1})\nsb.glue('note', 'hi')"),
    )
    done = ganymede("report.ipynb", "-p", "counter=2nd", "-p", "n=3", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [line] = json_lines(done.stdout)
    assert line["status"] == "ok"
    assert line["error"] is None
    assert line["output"] == "report.ipynb"
    assert line["results"] == {
        "seen": {"counter": "2nd", "n": 3},
        "rows": 300,
        "label": "2nd:3",
        "glued": {"total": 4},
        "note": "hi",
    }
    cells = json.loads((tmp_path / "report.ipynb").read_text())["cells"]
    assert cells[1]["metadata"]["tags"] == ["injected-parameters"]
    assert 'counter = "2nd"' in "".join(cells[1]["source"]) or "counter = '2nd'" in "".join(
        cells[1]["source"]
    )


def test_no_inject_leaves_the_notebook_alone_but_params_still_arrive(tmp_path: Path) -> None:
    write_notebook(
        tmp_path / "nb.ipynb",
        code("n = 1", "parameters"),
        code("from ganymede.kernel import params, result\nresult('n', n)\nresult('p', params())"),
    )
    done = ganymede("nb.ipynb", "-p", "n=5", "--no-inject", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json_lines(done.stdout)[0]["results"] == {"n": 1, "p": {"n": 5}}
    assert len(json.loads((tmp_path / "nb.ipynb").read_text())["cells"]) == 2


def test_a_raising_cell_exits_1_and_writes_outputs_up_to_it(tmp_path: Path) -> None:
    path = write_notebook(
        tmp_path / "nb.ipynb",
        code("print('before')"),
        code("1 / 0"),
        code("print('never')"),
    )
    done = ganymede("nb.ipynb", cwd=tmp_path)
    assert done.returncode == 1
    assert "cell 1 (id cell-1) raised ZeroDivisionError" in done.stderr
    assert "Traceback" in done.stderr or "ZeroDivisionError" in done.stderr.splitlines()[-1]
    assert "\x1b[" not in done.stderr  # plain text when stderr is not a terminal
    first, second, third = outputs_of(path)
    assert first[0]["text"] in ("before\n", ["before\n"])
    assert second[0]["output_type"] == "error"
    assert third == []


def test_allow_errors_runs_every_cell(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "nb.ipynb", code("1 / 0"), code("print('after')"))
    done = ganymede("nb.ipynb", "--allow-errors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert outputs_of(path)[1][0]["name"] == "stdout"


def test_a_cell_past_the_timeout_exits_3(tmp_path: Path) -> None:
    write_notebook(tmp_path / "nb.ipynb", code("import time\ntime.sleep(60)"), code("x = 1"))
    done = ganymede("nb.ipynb", "--timeout", "1", "--json", cwd=tmp_path)
    assert done.returncode == 3
    assert json_lines(done.stdout)[0]["status"] == "timeout"
    assert "cell 0 (id cell-0)" in done.stderr


def test_interrupt_on_timeout_records_the_interrupt_and_goes_on(tmp_path: Path) -> None:
    path = write_notebook(
        tmp_path / "nb.ipynb", code("import time\ntime.sleep(60)"), code("print('after')")
    )
    args = ("nb.ipynb", "--timeout", "1", "--interrupt-on-timeout", "--json")
    done = ganymede(*args, "--allow-errors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "cell 0 (id cell-0) ran longer than 1 s: interrupted; the run goes on" in done.stderr
    first, second = outputs_of(path)
    assert [output.get("ename") for output in first] == ["KeyboardInterrupt"]
    assert second[0]["name"] == "stdout"
    stopped = ganymede(*args, cwd=tmp_path)
    assert stopped.returncode == 3
    [line] = json_lines(stopped.stdout)
    assert line["error"]["message"] == "cell 0 (id cell-0) ran longer than 1 s: interrupted"
    assert outputs_of(path)[0][0]["ename"] == "KeyboardInterrupt"


def test_json_tracebacks_are_plain_text(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "nb.ipynb", code("raise ValueError('bad')"))
    done = ganymede("nb.ipynb", "--json", cwd=tmp_path)
    assert done.returncode == 1
    [line] = json_lines(done.stdout)
    traceback = "\n".join(line["error"]["traceback"])
    assert "ValueError: bad" in traceback
    assert "\x1b" not in traceback
    assert "\x1b[" in "".join(outputs_of(path)[0][0]["traceback"]), "the notebook keeps colours"


def test_a_kernel_that_dies_exits_4(tmp_path: Path) -> None:
    path = write_notebook(
        tmp_path / "nb.ipynb", code("print('hi')"), code("import os\nos._exit(1)")
    )
    done = ganymede("nb.ipynb", "--json", cwd=tmp_path)
    assert done.returncode == 4
    assert json_lines(done.stdout)[0]["status"] == "dead"
    assert outputs_of(path)[0], "outputs before the death are written"


def test_input_fails_clearly_instead_of_hanging(tmp_path: Path) -> None:
    write_notebook(tmp_path / "nb.ipynb", code("name = input('name? ')"))
    done = ganymede("nb.ipynb", "--json", cwd=tmp_path)
    assert done.returncode == 1
    error = json_lines(done.stdout)[0]["error"]
    assert error["ename"] == "StdinNotImplementedError"


@pytest.mark.parametrize(
    "content",
    [
        "this is not json",
        '{"cells": [',
        '{"nbformat": 4, "nbformat_minor": 5, "cells": [{"x": 1}]}',
    ],
)
def test_a_file_that_is_not_a_notebook_exits_5_untouched(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.ipynb"
    path.write_text(content)
    done = ganymede("bad.ipynb", "--json", cwd=tmp_path)
    assert done.returncode == 5
    assert json_lines(done.stdout)[0]["status"] == "invalid"
    assert "bad.ipynb: not a valid notebook" in done.stderr
    assert path.read_text() == content


def test_a_missing_notebook_exits_5(tmp_path: Path) -> None:
    done = ganymede("none.ipynb", cwd=tmp_path)
    assert done.returncode == 5
    assert "none.ipynb: cannot read" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-p", "counter"], "-p expects NAME=VALUE or NAME VALUE, got 'counter' alone"),
        (["-p", "2x=1"], "'2x' is not a valid parameter name"),
        (["--timeout", "0"], "--timeout must be more than 0 seconds"),
        (["-o", "-", "--json"], "-o - and --json both write to stdout"),
        (["--no-save", "-o", "x.ipynb"], "--no-save and -o/--output exclude each other"),
        (["--cwd", "nowhere"], "--cwd nowhere: not a directory"),
        (["--autosave-every", "-1"], "--autosave-every must be 0 or more seconds, got -1"),
        (["-"], "input - reads one notebook from stdin; give it alone"),
        (["-p", "n", "2", "-y", "[1]"], "-y: expected an object of parameters"),
    ],
)
def test_usage_errors_exit_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    path = write_notebook(tmp_path / "nb.ipynb", code("x = 1"))
    before = path.read_text()
    done = ganymede("nb.ipynb", *args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr
    assert path.read_text() == before


def test_unknown_config_key_exits_2_naming_it(tmp_path: Path) -> None:
    write_notebook(tmp_path / "nb.ipynb", code("x = 1"))
    (tmp_path / "ganymede.toml").write_text("[execute]\ntimeot = 3\n")
    done = ganymede("nb.ipynb", cwd=tmp_path)
    assert done.returncode == 2
    assert "unknown key 'timeot'" in done.stderr
    assert "ganymede.toml" in done.stderr


def test_config_sets_the_default_timeout(tmp_path: Path) -> None:
    write_notebook(tmp_path / "nb.ipynb", code("import time\ntime.sleep(60)"))
    (tmp_path / "ganymede.toml").write_text("[execute]\ntimeout = 1\n")
    assert ganymede("nb.ipynb", cwd=tmp_path).returncode == 3


def test_no_kernelspec_runs_on_python3_with_a_warning(tmp_path: Path) -> None:
    write_notebook(tmp_path / "nb.ipynb", code("print(1 + 1)"), kernelspec=False)
    done = ganymede("nb.ipynb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "warning" in done.stderr
    assert "python3" in done.stderr


def test_output_elsewhere_stdout_and_no_save(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "nb.ipynb", code("print('hi')"))
    before = path.read_text()
    elsewhere = ganymede("nb.ipynb", "-o", "out.ipynb", cwd=tmp_path)
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert path.read_text() == before
    assert outputs_of(tmp_path / "out.ipynb")[0][0]["name"] == "stdout"
    to_stdout = ganymede("nb.ipynb", "-o", "-", cwd=tmp_path)
    assert json.loads(to_stdout.stdout)["cells"][0]["outputs"][0]["name"] == "stdout"
    assert ganymede("nb.ipynb", "--no-save", cwd=tmp_path).returncode == 0
    assert path.read_text() == before


def test_cwd_is_the_kernels_working_directory(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    write_notebook(
        tmp_path / "nb.ipynb",
        code("import os\nfrom ganymede.kernel import result\nresult('cwd', os.getcwd())"),
    )
    default = ganymede("nb.ipynb", "--json", "--no-save", cwd=tmp_path)
    assert json_lines(default.stdout)[0]["results"]["cwd"] == str(tmp_path)
    moved = ganymede("nb.ipynb", "--json", "--no-save", "--cwd", "data", cwd=tmp_path)
    assert json_lines(moved.stdout)[0]["results"]["cwd"] == str(tmp_path / "data")


def test_a_full_disk_keeps_the_old_file_and_says_so(small_disk: Callable[[int], Path]) -> None:
    disk = small_disk(256)
    path = write_notebook(disk / "nb.ipynb", code("print('x' * 400_000)"))
    before = path.read_text()
    done = ganymede("nb.ipynb", cwd=disk)
    assert done.returncode == 5
    assert "nb.ipynb: cannot write: No space left on device" in done.stderr
    assert path.read_text() == before
    assert [p.name for p in disk.iterdir()] == ["nb.ipynb"], "no temporary file left behind"


def test_jobs_runs_notebooks_side_by_side(tmp_path: Path) -> None:
    clock = "import time\nfrom ganymede.kernel import result\n"
    names = []
    for n in range(6):
        names.append(f"nb{n}.ipynb")
        write_notebook(
            tmp_path / names[-1],
            code(f"{clock}result('start', time.time())\nresult('n', {n})"),
            code("time.sleep(0.5)"),
            code(f"{clock}result('end', time.time())"),
        )
    done = ganymede("-j", "2", "--json", *names, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = json_lines(done.stdout)
    assert [line["path"] for line in lines] == names
    assert [line["results"]["n"] for line in lines] == list(range(6))
    for name in names:
        assert outputs_of(tmp_path / name)[0], f"{name} was written"
    spans = sorted((line["results"]["start"], line["results"]["end"]) for line in lines)
    overlapping = sum(1 for (_, end), (start, _) in itertools.pairwise(spans) if start < end)
    assert overlapping >= 2, f"the runs never overlapped: {spans}"


def on_a_terminal(cwd: Path, *args: str, **env: str) -> tuple[int, str]:
    """Run ``ganymede execute`` with stdout and stderr on a pseudo-terminal: status and screen."""
    controller, terminal = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "ganymede", "execute", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
        env={**os.environ, "COLUMNS": "100", "TERM": "xterm", **env},
    ) as process:
        os.close(terminal)
        screen = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the terminal closed with the process
                break
            if not chunk:
                break
            screen += chunk
        status = process.wait(timeout=90)
    os.close(controller)
    return status, screen.decode()


def test_on_a_terminal_results_are_a_table_and_progress_a_bar(tmp_path: Path) -> None:
    """stdout and stderr on a pseudo-terminal, as a person running it sees them."""
    write_notebook(
        tmp_path / "nb.ipynb", code("from ganymede.kernel import result\nresult('answer', 42)")
    )
    status, text = on_a_terminal(tmp_path, "nb.ipynb")
    assert status == 0
    assert "running 1 cells" not in text, "plain progress lines are for pipes"
    table_row = next(line for line in text.splitlines() if "answer" in line)
    assert "nb.ipynb" in table_row
    assert "42" in table_row
    assert "│" in table_row or "|" in table_row


def test_no_color_keeps_the_traceback_plain_on_a_terminal(tmp_path: Path) -> None:
    write_notebook(tmp_path / "nb.ipynb", code("1 / 0"))
    coloured = on_a_terminal(tmp_path, "nb.ipynb", "--no-save")
    plain = on_a_terminal(tmp_path, "nb.ipynb", "--no-save", NO_COLOR="1")
    assert coloured[0] == plain[0] == 1

    def traceback_lines(text: str) -> list[str]:
        return [line for line in text.splitlines() if "Traceback (most recent call last)" in line]

    assert any("\x1b[" in line for line in traceback_lines(coloured[1]))
    assert traceback_lines(plain[1])
    assert not any("\x1b[" in line for line in traceback_lines(plain[1]))


def test_on_a_terminal_each_notebook_has_a_line_with_the_running_cell(tmp_path: Path) -> None:
    write_notebook(
        tmp_path / "nb.ipynb",
        code("import time"),
        code("\n# the slow cell\ntime.sleep(1.5)"),
        code("print('done')"),
    )
    status, text = on_a_terminal(tmp_path, "nb.ipynb")
    assert status == 0
    screen = text.replace("\r", "\n")
    line = next(line for line in screen.splitlines() if "▸ # the slow cell" in line)
    assert "nb.ipynb" in line
    assert "1/3" in line, "one cell done of three while the slow one runs"
    assert "running 3 cells" not in text


def test_off_a_terminal_progress_is_a_line_as_each_notebook_starts_and_ends(
    tmp_path: Path,
) -> None:
    write_notebook(tmp_path / "nb.ipynb", code("x = 1"), code("# the second cell\ny = 2"))
    done = ganymede("nb.ipynb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == "nb.ipynb: running 2 cells"
    assert re.fullmatch(r"\[1/1\] nb\.ipynb: ok in \d+\.\d\d s", lines[1])
    assert len(lines) == 2
    assert "\x1b[" not in done.stderr


WRITES_BOTH_STREAMS = (
    "import sys, time\nprint('out')\nprint('err', file=sys.stderr)\ntime.sleep(0.3)"
)
"""A cell that outlives ipykernel's 0.2 s stream flush timers, so a timer decides the order."""
INTERLEAVES_STREAMS = (
    "for n in range(3):\n"
    "    print('out', n)\n"
    "    print('err', n, file=sys.stderr)\n"
    "    time.sleep(0.3)"
)


def streams_of(outputs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(output["name"], "".join(output["text"])) for output in outputs]


def test_every_cell_keeps_its_streams_in_the_order_it_wrote_them(tmp_path: Path) -> None:
    """Whatever the kernel writes while it starts (debugpy's warning about frozen modules, on
    stderr) must not leave a stream flush pending into the first cell: its stderr would come
    out before its stdout."""
    write_notebook(
        tmp_path / "nb.ipynb",
        code(WRITES_BOTH_STREAMS),
        code(WRITES_BOTH_STREAMS),
        code(INTERLEAVES_STREAMS),
    )
    done = ganymede("nb.ipynb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    first, later, interleaved = outputs_of(tmp_path / "nb.ipynb")
    assert streams_of(first) == [("stdout", "out\n"), ("stderr", "err\n")]
    assert streams_of(later) == [("stdout", "out\n"), ("stderr", "err\n")]
    assert streams_of(interleaved) == [
        (name, f"{word} {n}\n")
        for n in range(3)
        for name, word in [("stdout", "out"), ("stderr", "err")]
    ]


def test_a_startup_file_writing_to_stderr_leaves_the_first_cell_in_order(tmp_path: Path) -> None:
    """An IPython startup file runs last in the kernel's start-up, so the stderr flush its write
    arms is due just after the kernel first answers: the first cell runs inside that window
    unless the run waits it out."""
    ipython_dir = tmp_path / "ipython"
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-note.py").write_text("import sys\nprint('starting', file=sys.stderr)\n")
    write_notebook(tmp_path / "nb.ipynb", code(WRITES_BOTH_STREAMS))
    done = subprocess.run(
        [sys.executable, "-m", "ganymede", "execute", "nb.ipynb"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "IPYTHONDIR": str(ipython_dir)},
        timeout=90,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    [first] = outputs_of(tmp_path / "nb.ipynb")
    assert streams_of(first) == [("stdout", "out\n"), ("stderr", "err\n")]
