"""Installing and uninstalling the Python distributions that carry prebuilt lab extensions.

pip does the work in the interpreter that runs Ganymede (so the extensions land where
``ganymede serve``'s JupyterLab looks); what each distribution brought is read back from its
installed files, not guessed from its name.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from ganymede.errors import NotInstalled, UsageError
from ganymede.lab.extensions import LabExtension, extensions_of
from ganymede.lab.pip import installed_by_report, run_pip

# A PEP 508 distribution name, as it starts a requirement such as ``name[extra]>=1``.
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


@dataclass(frozen=True)
class InstallReport:
    """A distribution an install concerned, and the lab extensions it carries.

    ``requested`` is False for a dependency pip pulled in (reported only when it carries
    extensions); ``newly_installed`` is False when pip found the request already satisfied.
    """

    distribution: str
    version: str
    requested: bool
    newly_installed: bool
    extensions: tuple[LabExtension, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        return {
            "distribution": self.distribution,
            "version": self.version,
            "requested": self.requested,
            "newly_installed": self.newly_installed,
            "extensions": [extension.to_json() for extension in self.extensions],
        }


@dataclass(frozen=True)
class UninstallReport:
    """A distribution pip removed, and the lab extensions that went away with it."""

    distribution: str
    version: str
    extensions: tuple[LabExtension, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        return {
            "distribution": self.distribution,
            "version": self.version,
            "extensions": [extension.to_json() for extension in self.extensions],
        }


def canonical_name(name: str) -> str:
    """PEP 503 normalisation: ``Jupyter_DocProvider`` and ``jupyter-docprovider`` are one."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requested_name(argument: str) -> str | None:
    """The distribution a pip install argument names, when it can be told without installing.

    A wheel's file name starts with its distribution; a requirement starts with its name; other
    paths and URLs only pip's report can name.
    """
    if argument.endswith(".whl"):
        return Path(argument).name.split("-", 1)[0]
    if "://" in argument or os.sep in argument or argument.startswith("."):
        return None
    match = _NAME.match(argument.strip())
    return match.group() if match else None


def install(
    names: Sequence[str],
    *,
    index_url: str | None = None,
    find_links: Sequence[str] = (),
    no_index: bool = False,
    upgrade: bool = False,
    on_output: Callable[[str], None] | None = None,
) -> list[InstallReport]:
    """pip-install ``names`` (requirements, wheel files, paths) and report their lab extensions.

    pip resolves everything before it installs anything, so a name it cannot find fails the
    whole call with pip's reason and nothing is installed. ``on_output`` receives pip's output.
    """
    _refuse_options(names)
    options = [argument for link in find_links for argument in ("--find-links", link)]
    if index_url:
        options += ["--index-url", index_url]
    if no_index:
        options.append("--no-index")
    if upgrade:
        options.append("--upgrade")
    with tempfile.TemporaryDirectory(prefix="ganymede-pip-") as scratch:
        report_file = Path(scratch) / "report.json"
        run_pip(["install", "--report", str(report_file), *options, *names], on_output)
        installed = installed_by_report(json.loads(report_file.read_text(encoding="utf-8")))
    importlib.invalidate_caches()
    reports: list[InstallReport] = []
    for item in installed:
        extensions = tuple(extensions_of(distribution(item.name)))
        if item.requested or extensions:
            reports.append(InstallReport(item.name, item.version, item.requested, True, extensions))
    seen = {canonical_name(report.distribution) for report in reports}
    for argument in names:
        name = requested_name(argument)
        if name is None or canonical_name(name) in seen:
            continue
        seen.add(canonical_name(name))
        try:
            present = distribution(name)
        except PackageNotFoundError:  # a requirement whose marker leaves this environment out
            continue
        extensions = tuple(extensions_of(present))
        reports.append(
            InstallReport(present.metadata["Name"], present.version, True, False, extensions)
        )
    return reports


def uninstall(
    names: Sequence[str], *, on_output: Callable[[str], None] | None = None
) -> list[UninstallReport]:
    """pip-uninstall the distributions ``names`` and report the lab extensions that went away.

    Every name is checked first: one that is not installed fails the call before pip removes
    anything.
    """
    _refuse_options(names)
    for name in names:
        if not _NAME.fullmatch(name):
            raise UsageError(f"{name!r} is not a distribution name")
    importlib.invalidate_caches()
    present: dict[str, tuple[str, str, list[LabExtension]]] = {}
    missing: list[str] = []
    for name in names:
        try:
            found = distribution(name)
        except PackageNotFoundError:
            missing.append(name)
            continue
        key = canonical_name(found.metadata["Name"])
        present.setdefault(key, (found.metadata["Name"], found.version, extensions_of(found)))
    if missing:
        raise NotInstalled(missing)
    run_pip(["uninstall", "--yes", *(name for name, _, _ in present.values())], on_output)
    return [
        UninstallReport(
            name,
            version,
            tuple(ext for ext in extensions if not (ext.path / "package.json").exists()),
        )
        for name, version, extensions in present.values()
    ]


def _refuse_options(names: Sequence[str]) -> None:
    """Names reach pip's command line: one that starts with a dash would be read as an option."""
    if not names:
        raise UsageError("name at least one package")
    for name in names:
        if name.startswith("-"):
            raise UsageError(f"{name!r} is not a package name")
