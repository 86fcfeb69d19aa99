"""``ganymede execute --cache``: real processes, real kernels, a real cache directory."""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_execute import code, ganymede, json_lines, write_notebook

pytestmark = pytest.mark.slow

PROBE = {"display_name": "Cache probe", "language": "python", "name": "cache-probe"}
COUNTING = "with open('runs.txt', 'a') as runs:\n    runs.write('x')"


@pytest.fixture
def probe_kernel(isolated_jupyter: Path) -> Path:
    """A kernelspec of our own (an ipykernel), so a test can take it away between runs."""
    directory = isolated_jupyter / "data" / "kernels" / "cache-probe"
    directory.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": PROBE["display_name"],
        "language": "python",
    }
    (directory / "kernel.json").write_text(json.dumps(spec))
    return directory


def counting_notebook(
    path: Path, *more: dict[str, Any], kernelspec: dict[str, str] = PROBE
) -> Path:
    write_notebook(
        path,
        code("n = 1", "parameters"),
        code(COUNTING),
        code("from ganymede.kernel import result\nresult('n', n)\nprint('n is', n)"),
        *more,
    )
    notebook = json.loads(path.read_text())
    notebook["metadata"]["kernelspec"] = dict(kernelspec)
    path.write_text(json.dumps(notebook, indent=1))
    return path


def runs(directory: Path) -> int:
    counter = directory / "runs.txt"
    return len(counter.read_text()) if counter.exists() else 0


def run_json(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    done = ganymede(*args, "--json", cwd=tmp_path)
    [line] = json_lines(done.stdout) or [{}]
    return done.returncode, line, done.stderr


def test_a_rerun_of_an_unchanged_notebook_starts_no_kernel(
    tmp_path: Path, probe_kernel: Path
) -> None:
    counting_notebook(tmp_path / "nb.ipynb")
    status, first, _ = run_json(tmp_path, "nb.ipynb", "--cache", "cache", "-p", "n", "3")
    assert (status, first["cached"], runs(tmp_path)) == (0, False, 1)
    ran = json.loads((tmp_path / "nb.ipynb").read_text())

    shutil.rmtree(probe_kernel)  # from now on, a run that needs the kernel cannot start
    for forced in ([], ["--log-output"]):  # --log-output takes the full command line's way
        status, line, errors = run_json(
            tmp_path, "nb.ipynb", "--cache", "cache", "-p", "n", "3", *forced
        )
        assert status == 0, errors
        assert line["cached"] is True
        assert line["results"] == {"n": 3}
        assert "ok from the cache" in errors
    assert runs(tmp_path) == 1
    hit = json.loads((tmp_path / "nb.ipynb").read_text())
    assert [c["outputs"] for c in hit["cells"]] == [c["outputs"] for c in ran["cells"]]
    assert hit["metadata"]["ganymede"]["run"]["cached"] is True
    assert (
        hit["metadata"]["ganymede"]["run"]["started"]
        == ran["metadata"]["ganymede"]["run"]["started"]
    )
    assert hit["metadata"]["papermill"]["parameters"] == {"n": 3}

    status, line, errors = run_json(tmp_path, "nb.ipynb", "--cache", "cache", "-p", "n", "4")
    assert status == 4, "new parameters are a miss, and the kernel is gone"
    assert "no such kernel: cache-probe" in errors


def test_prose_edits_keep_the_hit_and_the_new_prose(tmp_path: Path) -> None:
    path = counting_notebook(tmp_path / "nb.ipynb", kernelspec={**PROBE, "name": "python3"})
    assert run_json(tmp_path, "nb.ipynb", "--cache", "cache", "-o", "out.ipynb")[0] == 0
    notebook = json.loads(path.read_text())
    notebook["cells"].insert(
        0, {"cell_type": "markdown", "id": "new", "metadata": {}, "source": "# Added"}
    )
    path.write_text(json.dumps(notebook))
    status, line, _ = run_json(tmp_path, "nb.ipynb", "--cache", "cache", "-o", "out.ipynb")
    assert (status, line["cached"], runs(tmp_path)) == (0, True, 1)
    written = json.loads((tmp_path / "out.ipynb").read_text())
    assert "".join(written["cells"][0]["source"]) == "# Added"
    [printed] = [o for o in written["cells"][3]["outputs"] if o["output_type"] == "stream"]
    assert "".join(printed["text"]) == "n is 1\n"


def test_edited_code_a_changed_input_or_a_failed_run_runs_again(tmp_path: Path) -> None:
    path = counting_notebook(tmp_path / "nb.ipynb", kernelspec={**PROBE, "name": "python3"})
    notebook = json.loads(path.read_text())
    notebook["metadata"]["ganymede"] = {"inputs": ["data/*.csv"]}
    path.write_text(json.dumps(notebook))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.csv").write_text("1\n")
    (tmp_path / "extra.txt").write_text("one")
    args = ("nb.ipynb", "--cache", "cache", "--no-save", "--cache-input", "extra.txt")

    def again() -> bool:
        status, line, errors = run_json(tmp_path, *args)
        assert status == 0, errors
        return line["cached"]

    assert [again(), again()] == [False, True]
    (tmp_path / "data" / "a.csv").write_text("2\n")
    assert [again(), again()] == [False, True]
    (tmp_path / "data" / "b.csv").write_text("new file\n")
    assert [again(), again()] == [False, True]
    (tmp_path / "extra.txt").write_text("two")
    assert [again(), again()] == [False, True]
    notebook["cells"][2]["source"] += "\n"
    path.write_text(json.dumps(notebook))
    assert [again(), again()] == [False, True]
    assert runs(tmp_path) == 5

    failing = write_notebook(tmp_path / "fails.ipynb", code(COUNTING), code("1 / 0"))
    for _ in range(2):
        assert run_json(tmp_path, failing.name, "--cache", "cache", "--no-save")[0] == 1
    assert runs(tmp_path) == 7, "a failed run is never kept"


def test_inputs_that_cannot_be_keyed_are_errors_that_write_nothing(tmp_path: Path) -> None:
    path = counting_notebook(tmp_path / "nb.ipynb", kernelspec={**PROBE, "name": "python3"})
    notebook = json.loads(path.read_text())
    notebook["metadata"]["ganymede"] = {"inputs": "data.csv"}
    path.write_text(json.dumps(notebook))
    before = path.read_bytes()
    status, line, errors = run_json(tmp_path, "nb.ipynb", "--cache", "cache")
    assert (status, line["status"]) == (5, "invalid")
    assert "metadata.ganymede.inputs must be a list" in errors
    assert path.read_bytes() == before
    (tmp_path / "gone.csv").symlink_to(tmp_path / "nowhere.csv")
    del notebook["metadata"]["ganymede"]
    path.write_text(json.dumps(notebook))
    before = path.read_bytes()
    status, line, errors = run_json(
        tmp_path, "nb.ipynb", "--cache", "cache", "--cache-input", "*.csv"
    )
    assert status == 5
    assert "cannot read input" in errors and "gone.csv" in errors
    assert path.read_bytes() == before
    assert runs(tmp_path) == 0


def test_the_cache_from_the_config_file_and_its_bound(tmp_path: Path) -> None:
    (tmp_path / "ganymede.toml").write_text('[execute]\ncache = ".runs"\ncache_max_mb = 0.002\n')
    write_notebook(tmp_path / "a.ipynb", code(COUNTING), code("print('a' * 600)"))
    write_notebook(tmp_path / "b.ipynb", code(COUNTING), code("print('b' * 600)"))
    for name in ("a.ipynb", "b.ipynb"):
        assert run_json(tmp_path, name)[1]["cached"] is False
    entries = list((tmp_path / ".runs").glob("??/*.ipynb"))
    assert len(entries) == 1, "two entries of about 1.5 kB do not fit in 2 kB: the older went"
    assert run_json(tmp_path, "b.ipynb")[1]["cached"] is True
    assert run_json(tmp_path, "a.ipynb")[1]["cached"] is False
    assert run_json(tmp_path, "a.ipynb", "--no-cache")[1]["cached"] is False
    assert runs(tmp_path) == 4


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("[execute]\ncache_max_mb = 0\n", "cache_max_mb must be more than 0"),
        ("[execute]\ncache = 3\n", "cache must be a string"),
    ],
)
def test_bad_cache_settings_are_usage_errors(tmp_path: Path, config: str, message: str) -> None:
    (tmp_path / "ganymede.toml").write_text(config)
    write_notebook(tmp_path / "nb.ipynb", code(COUNTING))
    done = ganymede("nb.ipynb", cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr
    assert runs(tmp_path) == 0


def test_a_cache_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    write_notebook(tmp_path / "nb.ipynb", code(COUNTING))
    (tmp_path / "cache").write_text("not a directory")
    done = ganymede("nb.ipynb", "--cache", "cache", cwd=tmp_path)
    assert done.returncode == 2
    assert "--cache cache: not a directory" in done.stderr
    assert runs(tmp_path) == 0


def test_a_cache_that_cannot_be_written_costs_a_warning_not_the_run(
    tmp_path: Path, small_disk: Callable[[int], Path]
) -> None:
    disk = small_disk(64)
    with contextlib.suppress(OSError), (disk / "filler").open("wb", buffering=0) as filler:
        while True:  # until the disk is full
            filler.write(b"\0" * 4096)
    write_notebook(tmp_path / "nb.ipynb", code(COUNTING), code("print('x' * 5000)"))
    status, line, errors = run_json(tmp_path, "nb.ipynb", "--cache", str(disk))
    assert (status, line["status"], line["cached"]) == (0, "ok", False), errors
    assert "cannot keep nb.ipynb in the cache" in errors
    assert not list(disk.glob("??/*.ipynb"))
    assert json.loads((tmp_path / "nb.ipynb").read_text())["cells"][1]["outputs"]


def test_a_hit_warns_of_parameters_as_a_run_does(tmp_path: Path) -> None:
    counting_notebook(tmp_path / "nb.ipynb", kernelspec={**PROBE, "name": "python3"})
    args = ("nb.ipynb", "--cache", "cache", "--no-save", "-p", "unknown", "1")
    warning = "nb.ipynb: passed unknown parameter 'unknown'"
    status, line, errors = run_json(tmp_path, *args)
    assert (status, line["cached"]) == (0, False)
    assert warning in errors
    status, line, errors = run_json(tmp_path, *args)
    assert (status, line["cached"]) == (0, True)
    assert warning in errors
