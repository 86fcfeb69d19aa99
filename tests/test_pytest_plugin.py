"""``pytest --ganymede``, run as users run it: pytest in a subprocess on a folder of notebooks."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.execute.notebooks import notebook

pytestmark = pytest.mark.slow

FAILING_CELL = "def divide():\n    return 1 / 0\ndivide()"


def write(path: Path, nb: dict[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb))
    return path


def run_pytest(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in ``directory`` (its own rootdir: none of this suite's settings apply)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", ".", *args],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=120,
    )


def junit(directory: Path, name: str = "report.xml") -> dict[str, ET.Element]:
    """The test cases of a JUnit XML report, by name."""
    root = ET.parse(directory / name).getroot()
    return {case.attrib["name"]: case for case in root.iter("testcase")}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A passing and a failing notebook."""
    write(tmp_path / "nbs" / "passing.ipynb", notebook("x = 1", "print(x)"))
    write(tmp_path / "nbs" / "failing.ipynb", notebook("x = 1", FAILING_CELL, "print('never')"))
    return tmp_path


def assert_one_pass_one_failure(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
    report = done.stdout
    assert "nbs/failing.ipynb: cell 1 (id " in report
    assert "raised ZeroDivisionError: division by zero" in report
    assert FAILING_CELL in report  # the failing cell's source
    assert "----> 2     return 1 / 0" in report  # its traceback, from the kernel
    assert "\x1b" not in report
    assert "FAILED nbs/failing.ipynb::failing.ipynb - " in report


def test_a_passing_and_a_failing_notebook(folder: Path) -> None:
    done = run_pytest(folder, "--ganymede", "nbs", "--junitxml=report.xml")
    assert_one_pass_one_failure(done)
    summary = "FAILED nbs/failing.ipynb::failing.ipynb - ZeroDivisionError: division by zero"
    assert summary in done.stdout
    cases = junit(folder)
    assert cases["passing.ipynb"].find("failure") is None
    assert cases["failing.ipynb"].find("failure") is not None


def test_under_xdist(folder: Path) -> None:
    done = run_pytest(folder, "--ganymede", "nbs", "-n", "2")
    assert "2 workers" in done.stdout
    assert_one_pass_one_failure(done)


def test_without_the_flag_notebooks_are_not_collected_nor_the_runner_imported(
    tmp_path: Path,
) -> None:
    write(tmp_path / "failing.ipynb", notebook(FAILING_CELL))
    (tmp_path / "test_plain.py").write_text(
        "import sys\n\n"
        "def test_runner_not_imported():\n"
        "    assert 'ganymede.execute' not in sys.modules\n"
    )
    done = run_pytest(tmp_path, ".")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "ipynb" not in done.stdout


def test_parameters_tags_and_results(tmp_path: Path) -> None:
    write(
        tmp_path / "params.ipynb",
        notebook(
            ("n = 1\nlabel = 'default'", ["parameters"]),
            ("raise ValueError('expected')", ["raises-exception"]),
            ("raise RuntimeError('never run')", ["skip-execution"]),
            "from ganymede.kernel import result\nresult('n', n)\nresult('label', label)",
        ),
    )
    done = run_pytest(
        tmp_path,
        "--ganymede",
        "--ganymede-param",
        "n=3",
        "--ganymede-param",
        "label=x y",
        "--junitxml=report.xml",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    properties = {
        prop.attrib["name"]: json.loads(prop.attrib["value"])
        for prop in junit(tmp_path)["params.ipynb"].iter("property")
    }
    assert properties == {"n": 3, "label": "x y"}


def test_run_warnings_are_pytest_warnings(tmp_path: Path) -> None:
    write(tmp_path / "plain.ipynb", notebook(("x = 1", ["parameters"])))
    done = run_pytest(tmp_path, "--ganymede", "--ganymede-param", "y=1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NotebookWarning: plain.ipynb: passed unknown parameter 'y'" in done.stdout


def test_timeout_fails_the_notebook_and_names_the_cell(tmp_path: Path) -> None:
    write(tmp_path / "slow.ipynb", notebook("x = 1", "import time\ntime.sleep(60)"))
    done = run_pytest(tmp_path, "--ganymede", "--ganymede-timeout", "0.5")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "slow.ipynb: cell 1 (id " in done.stdout
    assert "ran longer than 0.5 s" in done.stdout


def test_interrupt_on_timeout_with_allow_errors_goes_on(tmp_path: Path) -> None:
    write(
        tmp_path / "slow.ipynb",
        notebook(
            "import time\ntime.sleep(60)",
            "from ganymede.kernel import result\nresult('after', True)",
        ),
    )
    done = run_pytest(
        tmp_path,
        "--ganymede",
        "--ganymede-timeout",
        "0.5",
        "--ganymede-interrupt-on-timeout",
        "--ganymede-allow-errors",
        "--junitxml=report.xml",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [prop] = junit(tmp_path)["slow.ipynb"].iter("property")
    assert (prop.attrib["name"], prop.attrib["value"]) == ("after", "true")


def test_unknown_kernel_fails_the_item_with_the_reason(tmp_path: Path) -> None:
    write(tmp_path / "plain.ipynb", notebook("x = 1"))
    done = run_pytest(tmp_path, "--ganymede", "--ganymede-kernel", "no-such-kernel")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no such kernel: no-such-kernel" in done.stdout


def test_an_invalid_notebook_fails_alone(tmp_path: Path) -> None:
    (tmp_path / "broken.ipynb").write_text("{not json")
    write(tmp_path / "plain.ipynb", notebook("x = 1"))
    done = run_pytest(tmp_path, "--ganymede")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
    assert "broken.ipynb" in done.stdout
    assert "not valid JSON" in done.stdout or "JSON" in done.stdout


def test_a_bad_parameter_is_a_usage_error(tmp_path: Path) -> None:
    write(tmp_path / "plain.ipynb", notebook("x = 1"))
    done = run_pytest(tmp_path, "--ganymede", "--ganymede-param", "no-equals-sign")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "no-equals-sign" in done.stderr


def test_output_writes_executed_notebooks_and_keeps_the_inputs(folder: Path) -> None:
    source = (folder / "nbs" / "passing.ipynb").read_text()
    done = run_pytest(folder, "--ganymede", "nbs", "--ganymede-output", "out")
    assert done.returncode == 1, done.stdout + done.stderr
    assert (folder / "nbs" / "passing.ipynb").read_text() == source
    executed = json.loads((folder / "out" / "nbs" / "passing.ipynb").read_text())
    assert executed["cells"][1]["outputs"][0]["text"] == ["1\n"]
    failed = json.loads((folder / "out" / "nbs" / "failing.ipynb").read_text())
    assert failed["cells"][1]["outputs"][0]["ename"] == "ZeroDivisionError"


def test_overwrite_writes_back_in_place(tmp_path: Path) -> None:
    path = write(tmp_path / "plain.ipynb", notebook("print(2)"))
    done = run_pytest(tmp_path, "--ganymede", "--ganymede-overwrite")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(path.read_text())["cells"][0]["outputs"][0]["text"] == ["2\n"]


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--ganymede-timeout=0", "--ganymede-timeout must be more than 0 seconds, got 0"),
        ("--ganymede-startup-timeout=-1", "--ganymede-startup-timeout must be more than 0"),
        ("--ganymede-warm=-1", "--ganymede-warm must be 0 or more"),
    ],
)
def test_bad_numbers_are_usage_errors(tmp_path: Path, flag: str, message: str) -> None:
    done = run_pytest(tmp_path, "--ganymede", flag)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert message in done.stderr


def test_output_and_overwrite_exclude_each_other(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, "--ganymede", "--ganymede-output", "o", "--ganymede-overwrite")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "exclude each other" in done.stderr


def test_checkpoints_are_not_collected(tmp_path: Path) -> None:
    write(tmp_path / ".ipynb_checkpoints" / "plain-checkpoint.ipynb", notebook(FAILING_CELL))
    write(tmp_path / "plain.ipynb", notebook("x = 1"))
    done = run_pytest(tmp_path, "--ganymede")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


KERNEL_CLOCK = (
    "import os, time\n"
    "from ganymede.kernel import result\n"
    "stat = open('/proc/self/stat').read().rsplit(')', 1)[1].split()\n"
    "result('kernel_started', int(stat[19]) / os.sysconf('SC_CLK_TCK'))\n"
    "result('ended', time.clock_gettime(time.CLOCK_BOOTTIME))"
)
"""When this kernel's process started and when its last cell ran, on the boot clock."""


@pytest.mark.parametrize("warm", [2, 0])
def test_the_next_kernels_start_while_a_notebook_runs(tmp_path: Path, warm: int) -> None:
    for name in ("a", "b", "c"):
        write(tmp_path / f"{name}.ipynb", notebook(KERNEL_CLOCK))
    done = run_pytest(tmp_path, "--ganymede", f"--ganymede-warm={warm}", "--junitxml=r.xml")
    assert done.returncode == 0, done.stdout + done.stderr
    clocks = {
        name: {prop.attrib["name"]: float(prop.attrib["value"]) for prop in case.iter("property")}
        for name, case in junit(tmp_path, "r.xml").items()
    }
    first_ended = clocks["a.ipynb"]["ended"]
    later_started = [clocks[name]["kernel_started"] for name in ("b.ipynb", "c.ipynb")]
    tick = 0.02  # the kernel start time is counted in clock ticks
    if warm:
        assert all(started < first_ended for started in later_started)
    else:
        assert all(started > first_ended - tick for started in later_started)


def test_notebooks_run_on_a_kernel_gateway(tmp_path: Path) -> None:
    from stress.gateway import running_gateway

    for name in ("a", "b"):
        write(
            tmp_path / "nbs" / f"{name}.ipynb",
            notebook("import os\nfrom ganymede.kernel import result\nresult('ppid', os.getppid())"),
        )
    with running_gateway(tmp_path / "gateway") as gateway:
        done = run_pytest(
            tmp_path, "--ganymede", "nbs", "--ganymede-gateway-url", gateway.url, "--junitxml=r.xml"
        )
        assert done.returncode == 0, done.stdout + done.stderr
        parents = {
            name: [json.loads(prop.attrib["value"]) for prop in case.iter("property")]
            for name, case in junit(tmp_path, "r.xml").items()
        }
        assert parents == {"a.ipynb": [gateway.process.pid], "b.ipynb": [gateway.process.pid]}


def test_a_gateway_that_is_down_fails_each_notebook_with_the_reason(tmp_path: Path) -> None:
    write(tmp_path / "a.ipynb", notebook("x = 1"))
    done = run_pytest(tmp_path, "--ganymede", "--ganymede-gateway-url", "http://127.0.0.1:1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gateway http://127.0.0.1:1 cannot be reached" in done.stdout


def test_a_bad_gateway_url_is_a_usage_error(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, "--ganymede", "--ganymede-gateway-url", "gateway:8888")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "give an http:// or https:// URL" in done.stderr


def with_execution(nb: dict[str, object], **execution: object) -> dict[str, object]:
    metadata = nb["metadata"]
    assert isinstance(metadata, dict)
    metadata["execution"] = execution
    return nb


def test_nbmakes_notebook_settings_win(tmp_path: Path) -> None:
    write(
        tmp_path / "slow.ipynb",
        with_execution(notebook("import time\ntime.sleep(60)"), timeout=0.5),
    )
    write(
        tmp_path / "errors.ipynb",
        with_execution(notebook("1 / 0", "print('after')"), allow_errors=True),
    )
    write(tmp_path / "bad.ipynb", with_execution(notebook("x = 1"), timeout="soon"))
    done = run_pytest(tmp_path, "--ganymede", "--ganymede-timeout=30")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 failed, 1 passed" in done.stdout
    assert "slow.ipynb: cell 0 (id " in done.stdout
    assert "ran longer than 0.5 s" in done.stdout
    assert "metadata.execution.timeout must be a number of seconds" in done.stdout
