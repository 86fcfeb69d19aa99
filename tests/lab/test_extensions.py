"""Finding prebuilt extensions as JupyterLab does, and telling them from their assets."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ganymede.lab import installed_extensions
from ganymede.lab.extensions import labextension_dir, read_extension
from ganymede.lab.packages import requested_name
from ganymede.lab.pip import failure_reason

PREFIX = ("..", "..", "..", "share", "jupyter", "labextensions")


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ((*PREFIX, "my-ext", "package.json"), (*PREFIX, "my-ext")),
        ((*PREFIX, "@scope", "ext", "package.json"), (*PREFIX, "@scope", "ext")),
        ((*PREFIX, "my-ext", "static", "package.json"), None),
        ((*PREFIX, "@scope", "ext", "static", "package.json"), None),
        ((*PREFIX, "@scope", "package.json"), None),
        ((*PREFIX, "my-ext", "install.json"), None),
        (("share", "jupyter", "nbextensions", "x", "package.json"), None),
        (("package.json",), None),
    ],
)
def test_only_an_extensions_own_package_json_marks_it(
    parts: tuple[str, ...], expected: tuple[str, ...] | None
) -> None:
    assert labextension_dir(parts) == expected


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        ("jupyter-docprovider", "jupyter-docprovider"),
        ("jupyterlab_git==0.50.1", "jupyterlab_git"),
        ("pkg[extra]>=1", "pkg"),
        ("dist/My_Ext-1.0-py3-none-any.whl", "My_Ext"),
        ("./some/project", None),
        ("https://example.org/pkg.tar.gz", None),
    ],
)
def test_the_distribution_an_install_argument_names(argument: str, expected: str | None) -> None:
    assert requested_name(argument) == expected


def test_pips_last_error_line_is_the_reason() -> None:
    output = [
        "Looking in links: /wheels\n",
        "ERROR: Could not find a version that satisfies the requirement nope\n",
        "ERROR: No matching distribution found for nope\n",
    ]
    assert failure_reason(output, 1) == "No matching distribution found for nope"
    assert failure_reason(["/venv/bin/python: No module named pip\n"], 1) == (
        "pip exited with status 1: /venv/bin/python: No module named pip"
    )
    assert failure_reason([], 2) == "pip exited with status 2"


def write_extension(directory: Path, name: str, version: str, prebuilt: bool = True) -> Path:
    directory.mkdir(parents=True)
    package: dict[str, object] = {"name": name, "version": version}
    if prebuilt:
        package["jupyterlab"] = {"_build": {"load": "static/remoteEntry.js"}}
    (directory / "package.json").write_text(json.dumps(package))
    return directory


def test_a_package_json_without_a_build_is_not_a_prebuilt_extension(tmp_path: Path) -> None:
    source = write_extension(tmp_path / "source-ext", "source-ext", "1.0.0", prebuilt=False)
    assert read_extension(source) is None
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "package.json").write_text("{not json")
    assert read_extension(tmp_path / "broken") is None


def test_the_first_data_dir_holding_a_name_wins_as_in_jupyterlab(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = tmp_path / "jupyter-path" / "labextensions"  # JUPYTER_PATH comes before all others
    monkeypatch.setenv("JUPYTER_PATH", str(first.parent))
    write_extension(
        first / "@jupyter" / "docprovider-extension", "@jupyter/docprovider-extension", "9.9.9"
    )
    user_dir = Path(os.environ["JUPYTER_DATA_DIR"], "labextensions")
    write_extension(user_dir / "mine", "mine", "0.1.0")
    write_extension(user_dir / "not-built", "not-built", "0.1.0", prebuilt=False)
    by_name = {extension.name: extension for extension in installed_extensions()}
    shadowing = by_name["@jupyter/docprovider-extension"]
    assert (shadowing.version, shadowing.distribution) == ("9.9.9", None)
    assert shadowing.path == first / "@jupyter" / "docprovider-extension"
    assert by_name["mine"].path == user_dir / "mine"
    assert "not-built" not in by_name
    assert list(by_name) == sorted(by_name)


def test_the_listing_agrees_with_jupyterlabs_own_discovery() -> None:
    from jupyter_core.paths import jupyter_path
    from jupyterlab_server.config import get_federated_extensions

    user_dir = Path(os.environ["JUPYTER_DATA_DIR"], "labextensions")
    write_extension(user_dir / "@mine" / "scoped", "@mine/scoped", "1.2.3")
    write_extension(user_dir / "not-built", "not-built", "0.1.0", prebuilt=False)
    theirs = get_federated_extensions(jupyter_path("labextensions"))
    loaded = {
        name: (data["version"], Path(data["ext_path"]))
        for name, data in theirs.items()
        if "_build" in data["jupyterlab"]
    }
    ours = {
        extension.name: (extension.version, extension.path) for extension in installed_extensions()
    }
    assert ours == loaded
    assert "@mine/scoped" in ours
