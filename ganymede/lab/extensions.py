"""Prebuilt lab extensions: where JupyterLab finds them and which distribution put each there.

JupyterLab 4 loads a prebuilt ("federated") extension from any ``labextensions`` directory on the
Jupyter data path: ``<dir>/<name>/package.json`` or, for a scoped name, ``<dir>/@scope/<name>/``.
The first directory holding a name wins, and a ``package.json`` without ``jupyterlab._build`` is
not a prebuilt extension, so JupyterLab skips it; this module follows the same rules.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import Distribution, distributions
from itertools import chain
from pathlib import Path

from jupyter_core.paths import jupyter_path

LABEXTENSIONS = ("share", "jupyter", "labextensions")


@dataclass(frozen=True)
class LabExtension:
    """One prebuilt extension; ``distribution`` is the Python distribution that installed it."""

    name: str
    version: str
    path: Path
    distribution: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {
            "name": self.name,
            "version": self.version,
            "path": str(self.path),
            "distribution": self.distribution,
        }


def labextension_dir(parts: tuple[str, ...]) -> tuple[str, ...] | None:
    """The parts of an extension's directory when ``parts`` name its ``package.json``, else None.

    A wheel's data files land under ``share/jupyter/labextensions/``; only the ``package.json``
    directly inside ``<name>/`` or ``@scope/<name>/`` marks an extension (deeper ones are assets).
    """
    if not parts or parts[-1] != "package.json":
        return None
    width = len(LABEXTENSIONS)
    for start in range(len(parts) - width):
        if parts[start : start + width] != LABEXTENSIONS:
            continue
        inside = parts[start + width : -1]
        unscoped = len(inside) == 1 and not inside[0].startswith("@")
        scoped = len(inside) == 2 and inside[0].startswith("@")
        if unscoped or scoped:
            return parts[:-1]
    return None


def read_extension(directory: Path, distribution: str | None = None) -> LabExtension | None:
    """The extension in ``directory``, or None when its package.json is not one JupyterLab loads.

    An unreadable or malformed package.json is treated as no extension: JupyterLab cannot load it
    either, and one broken directory must not hide every other extension from a listing.
    """
    try:
        package = json.loads((directory / "package.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(package, dict) or not isinstance(package.get("name"), str):
        return None
    lab = package.get("jupyterlab")
    if not isinstance(lab, dict) or "_build" not in lab:
        return None
    return LabExtension(package["name"], str(package.get("version", "")), directory, distribution)


def extension_dirs_of(distribution: Distribution) -> list[Path]:
    """Where the distribution's installed files put lab extensions, from its RECORD."""
    found: list[Path] = []
    for file in distribution.files or ():
        directory = labextension_dir(file.parts)
        if directory is not None:
            located = Path(os.path.normpath(distribution.locate_file(Path(*directory))))
            if located not in found:
                found.append(located)
    return found


def extensions_of(distribution: Distribution) -> list[LabExtension]:
    """The lab extensions a distribution installed that are present now."""
    name = distribution.metadata["Name"]
    extensions = (read_extension(directory, name) for directory in extension_dirs_of(distribution))
    return [extension for extension in extensions if extension is not None]


def installed_extensions() -> list[LabExtension]:
    """Every prebuilt extension JupyterLab would load from this environment, sorted by name."""
    importlib.invalidate_caches()  # pip may have changed site-packages since the last lookup
    owners = _owners_by_directory(distributions())
    found: dict[str, LabExtension] = {}
    for root in map(Path, jupyter_path("labextensions")):
        unscoped = sorted(root.glob("[!@]*/package.json"))
        scoped = sorted(root.glob("@*/*/package.json"))
        for package_json in chain(unscoped, scoped):
            directory = package_json.parent
            extension = read_extension(directory, owners.get(directory.resolve()))
            if extension is not None and extension.name not in found:
                found[extension.name] = extension
    return sorted(found.values(), key=lambda extension: extension.name)


def _owners_by_directory(installed: Iterable[Distribution]) -> dict[Path, str]:
    owners: dict[Path, str] = {}
    for distribution in installed:
        for directory in extension_dirs_of(distribution):
            owners.setdefault(directory.resolve(), distribution.metadata["Name"])
    return owners
