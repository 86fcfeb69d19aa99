"""``ganymede lab extension``: real pip installs of real wheels, read back as JupyterLab would."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

LABEXTENSIONS = Path(sysconfig.get_path("data")) / "share" / "jupyter" / "labextensions"

pytestmark = pytest.mark.usefixtures("clean_environment")


def ganymede(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ganymede", "lab", "extension", *args],
        capture_output=True,
        text=True,
        timeout=110,
    )


def listed() -> dict[str, dict[str, str | None]]:
    done = ganymede("list", "--json")
    assert done.returncode == 0, done.stderr
    return {item["name"]: item for item in json.loads(done.stdout)["extensions"]}


def test_install_by_path_then_list_then_uninstall(wheelhouse: Path) -> None:
    wheel = wheelhouse / "ganymede_test_ext-0.1.0-py3-none-any.whl"
    where = LABEXTENSIONS / "ganymede-test-ext"

    done = ganymede("install", str(wheel))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "installed ganymede-test-ext 0.1.0",
        f"  ganymede-test-ext  0.0.7  {where}",
    ]
    assert "Successfully installed" not in done.stdout + done.stderr  # pip's chatter stays quiet
    assert (where / "static" / "remoteEntry.js").is_file()

    assert listed()["ganymede-test-ext"] == {
        "name": "ganymede-test-ext",
        "version": "0.0.7",
        "path": str(where),
        "distribution": "ganymede-test-ext",
    }
    table = ganymede("list").stdout.splitlines()
    row = next(line for line in table if line.startswith("ganymede-test-ext "))
    assert row.split() == ["ganymede-test-ext", "0.0.7", "ganymede-test-ext", str(where)]

    done = ganymede("uninstall", "ganymede-test-ext")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "uninstalled ganymede-test-ext 0.1.0",
        f"  ganymede-test-ext  0.0.7  {where}",
    ]
    assert not where.exists()
    assert "ganymede-test-ext" not in listed()


def test_installing_again_reports_already_installed(wheelhouse: Path) -> None:
    wheel = str(wheelhouse / "ganymede_test_ext-0.1.0-py3-none-any.whl")
    assert ganymede("install", wheel).returncode == 0
    done = ganymede("install", "--json", wheel)
    assert done.returncode == 0, done.stderr
    (report,) = json.loads(done.stdout)["installed"]
    assert report["distribution"] == "ganymede-test-ext"
    assert (report["requested"], report["newly_installed"]) == (True, False)
    assert [item["name"] for item in report["extensions"]] == ["ganymede-test-ext"]


def test_a_dependency_that_brings_an_extension_is_reported(wheelhouse: Path) -> None:
    done = ganymede(
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
        "path": str(LABEXTENSIONS / "@ganymede-test" / "scoped-ext"),
        "distribution": "ganymede-test-scoped",
    }
    assert listed()["@ganymede-test/scoped-ext"]["distribution"] == "ganymede-test-scoped"


def test_a_distribution_without_an_extension_installs_with_a_warning(wheelhouse: Path) -> None:
    done = ganymede("install", "--no-index", "--find-links", str(wheelhouse), "ganymede-test-plain")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["installed ganymede-test-plain 1.0.0"]
    assert "warning: ganymede-test-plain 1.0.0 installs no lab extension" in done.stderr


def test_a_version_spec_passes_through_to_pip(tmp_path: Path) -> None:
    from tests.lab.wheels import build_wheel

    for version in ("0.1.0", "0.2.0"):
        build_wheel(tmp_path, "ganymede-test-ext", version, extension="ganymede-test-ext")
    done = ganymede(
        "install", "--json", "--no-index", "--find-links", str(tmp_path), "ganymede-test-ext==0.1.0"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["installed"][0]["version"] == "0.1.0"


def test_a_name_pip_cannot_find_is_one_clear_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = ganymede(
        "install", "--json", "--no-index", "--find-links", str(empty), "ganymede-no-such-dist"
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines()[-1] == (
        "ganymede lab extension install: error: "
        "No matching distribution found for ganymede-no-such-dist"
    )
    assert "Traceback" not in done.stderr


def test_one_missing_name_installs_nothing(wheelhouse: Path) -> None:
    done = ganymede(
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
    assert ganymede("uninstall", "ganymede-test-plain").returncode == 1  # not installed


def test_uninstalling_what_is_not_installed_is_a_clear_error() -> None:
    done = ganymede("uninstall", "ganymede-test-ext", "ganymede-no-such-dist")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines()[-1] == (
        "ganymede lab extension uninstall: error: "
        "not installed: ganymede-test-ext, ganymede-no-such-dist"
    )


def test_list_shows_the_docprovider_the_lab_extra_installs() -> None:
    extension = listed()["@jupyter/docprovider-extension"]
    assert extension["distribution"] == "jupyter-docprovider"
    assert extension["version"]
    assert Path(str(extension["path"]), "package.json").is_file()


def test_verbose_shows_pips_output_on_stderr_only(wheelhouse: Path) -> None:
    wheel = str(wheelhouse / "ganymede_test_ext-0.1.0-py3-none-any.whl")
    done = ganymede("install", "--verbose", "--json", wheel)
    assert done.returncode == 0, done.stderr
    assert "Successfully installed ganymede-test-ext-0.1.0" in done.stderr
    assert json.loads(done.stdout)["installed"][0]["distribution"] == "ganymede-test-ext"


def test_an_argument_that_looks_like_an_option_is_refused() -> None:
    done = ganymede("uninstall", "--", "--yes")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == "ganymede: error: '--yes' is not a package name"


@pytest.mark.parametrize("words", [(), ("install",), ("list",), ("uninstall",)])
def test_help(words: tuple[str, ...]) -> None:
    done = ganymede(*words, "--help")
    assert done.returncode == 0
    assert done.stdout.startswith(f"Usage: ganymede lab extension {' '.join(words)}".rstrip())
