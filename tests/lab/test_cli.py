"""``ganymede lab extension``: real pip installs of real wheels, read back as JupyterLab would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.lab.conftest import LabEnvironment
from tests.lab.wheels import build_wheel

pytestmark = pytest.mark.slow


def test_install_by_path_then_list_then_uninstall(lab: LabEnvironment, wheelhouse: Path) -> None:
    wheel = wheelhouse / "ganymede_test_ext-0.1.0-py3-none-any.whl"
    where = lab.labextensions / "ganymede-test-ext"

    done = lab.ganymede("install", str(wheel))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "installed ganymede-test-ext 0.1.0",
        f"  ganymede-test-ext  0.0.7  {where}",
    ]
    assert "Successfully installed" not in done.stdout + done.stderr  # pip's chatter stays quiet
    assert (where / "static" / "remoteEntry.js").is_file()

    assert lab.listed()["ganymede-test-ext"] == {
        "name": "ganymede-test-ext",
        "version": "0.0.7",
        "path": str(where),
        "distribution": "ganymede-test-ext",
    }
    table = lab.ganymede("list").stdout.splitlines()
    row = next(line for line in table if line.startswith("ganymede-test-ext "))
    assert row.split() == ["ganymede-test-ext", "0.0.7", "ganymede-test-ext", str(where)]

    done = lab.ganymede("uninstall", "ganymede-test-ext")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "uninstalled ganymede-test-ext 0.1.0",
        f"  ganymede-test-ext  0.0.7  {where}",
    ]
    assert not where.exists()
    assert "ganymede-test-ext" not in lab.listed()


def test_installing_again_reports_already_installed(lab: LabEnvironment, wheelhouse: Path) -> None:
    wheel = str(wheelhouse / "ganymede_test_ext-0.1.0-py3-none-any.whl")
    assert lab.ganymede("install", wheel).returncode == 0
    done = lab.ganymede("install", "--json", wheel)
    assert done.returncode == 0, done.stderr
    (report,) = json.loads(done.stdout)["installed"]
    assert report["distribution"] == "ganymede-test-ext"
    assert (report["requested"], report["newly_installed"]) == (True, False)
    assert [item["name"] for item in report["extensions"]] == ["ganymede-test-ext"]


def test_a_dependency_that_brings_an_extension_is_reported(
    lab: LabEnvironment, wheelhouse: Path
) -> None:
    done = lab.ganymede(
        "install", "--json", "--no-index", "--find-links", str(wheelhouse), "ganymede-test-scoped"
    )
    assert done.returncode == 0, done.stderr
    reports = json.loads(done.stdout)["installed"]
    assert [(r["distribution"], r["version"], r["requested"]) for r in reports] == [
        ("ganymede-test-scoped", "2.0.0", True)
    ]
    (extension,) = reports[0]["extensions"]
    assert extension == {
        "name": "@ganymede-test/scoped-ext",
        "version": "2.0.1",
        "path": str(lab.labextensions / "@ganymede-test" / "scoped-ext"),
        "distribution": "ganymede-test-scoped",
    }
    assert lab.listed()["@ganymede-test/scoped-ext"]["distribution"] == "ganymede-test-scoped"


def test_a_distribution_without_an_extension_installs_with_a_warning(
    lab: LabEnvironment, wheelhouse: Path
) -> None:
    done = lab.ganymede(
        "install", "--no-index", "--find-links", str(wheelhouse), "ganymede-test-plain"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["installed ganymede-test-plain 1.0.0"]
    assert "warning: ganymede-test-plain 1.0.0 installs no lab extension" in done.stderr


def test_a_version_spec_passes_through_to_pip(lab: LabEnvironment, tmp_path: Path) -> None:
    for version in ("0.1.0", "0.2.0"):
        build_wheel(tmp_path, "ganymede-test-ext", version, extension="ganymede-test-ext")
    done = lab.ganymede(
        "install", "--json", "--no-index", "--find-links", str(tmp_path), "ganymede-test-ext==0.1.0"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["installed"][0]["version"] == "0.1.0"


def test_a_name_pip_cannot_find_is_one_clear_error(lab: LabEnvironment, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = lab.ganymede(
        "install", "--json", "--no-index", "--find-links", str(empty), "ganymede-no-such-dist"
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines()[-1] == (
        "ganymede lab extension install: error: "
        "No matching distribution found for ganymede-no-such-dist"
    )
    assert "Traceback" not in done.stderr


def test_one_missing_name_installs_nothing(lab: LabEnvironment, wheelhouse: Path) -> None:
    done = lab.ganymede(
        "install",
        "--no-index",
        "--find-links",
        str(wheelhouse),
        "ganymede-test-plain",
        "ganymede-no-such-dist",
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert "no matching distribution found" in done.stderr.lower()
    assert lab.ganymede("uninstall", "ganymede-test-plain").returncode == 1  # not installed


def test_uninstalling_what_is_not_installed_is_a_clear_error(lab: LabEnvironment) -> None:
    done = lab.ganymede("uninstall", "ganymede-test-ext", "ganymede-no-such-dist")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines()[-1] == (
        "ganymede lab extension uninstall: error: "
        "not installed: ganymede-test-ext, ganymede-no-such-dist"
    )


def test_list_shows_the_docprovider_the_lab_extra_installs(base_venv: LabEnvironment) -> None:
    extension = base_venv.listed()["@jupyter/docprovider-extension"]
    assert extension["distribution"] == "jupyter-docprovider"
    assert extension["version"]
    assert Path(str(extension["path"]), "package.json").is_file()


def test_verbose_shows_pips_output_on_stderr_only(lab: LabEnvironment, wheelhouse: Path) -> None:
    wheel = str(wheelhouse / "ganymede_test_ext-0.1.0-py3-none-any.whl")
    done = lab.ganymede("install", "--verbose", "--json", wheel)
    assert done.returncode == 0, done.stderr
    assert "Successfully installed ganymede-test-ext-0.1.0" in done.stderr
    assert json.loads(done.stdout)["installed"][0]["distribution"] == "ganymede-test-ext"


def test_an_argument_that_looks_like_an_option_is_refused(lab: LabEnvironment) -> None:
    done = lab.ganymede("uninstall", "--", "--yes")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == "ganymede: error: '--yes' is not a package name"


@pytest.mark.parametrize("words", [(), ("install",), ("list",), ("uninstall",)])
def test_help(lab: LabEnvironment, words: tuple[str, ...]) -> None:
    done = lab.ganymede(*words, "--help")
    assert done.returncode == 0
    assert done.stdout.startswith(f"Usage: ganymede lab extension {' '.join(words)}".rstrip())
