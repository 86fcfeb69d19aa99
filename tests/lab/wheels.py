"""Tiny real wheels for pip to install offline: metadata, RECORD, optional lab extension data."""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from pathlib import Path


def build_wheel(
    directory: Path,
    name: str,
    version: str,
    extension: str | None = None,
    extension_version: str = "0.0.7",
    requires: tuple[str, ...] = (),
) -> Path:
    """Write ``<name>-<version>-py3-none-any.whl`` into ``directory`` and return its path.

    With ``extension``, the wheel's data files put a prebuilt extension's package.json under
    ``share/jupyter/labextensions/<extension>/``, exactly where a real extension's wheel does.
    """
    stem = f"{name.replace('-', '_')}-{version}"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {requirement}\n" for requirement in requires)
    files = {
        f"{stem}.dist-info/METADATA": metadata,
        f"{stem}.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: ganymede-tests\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n"
        ),
    }
    if extension is not None:
        package = {
            "name": extension,
            "version": extension_version,
            "jupyterlab": {"_build": {"load": "static/remoteEntry.js", "extension": "./extension"}},
        }
        data = f"{stem}.data/data/share/jupyter/labextensions/{extension}"
        files[f"{data}/package.json"] = json.dumps(package)
        files[f"{data}/static/remoteEntry.js"] = "/* a prebuilt extension's entry point */\n"
    record = f"{stem}.dist-info/RECORD"
    rows = [
        f"{path},sha256={_digest(text.encode())},{len(text.encode())}"
        for path, text in files.items()
    ]
    files[record] = "\n".join([*rows, f"{record},,"]) + "\n"
    wheel = directory / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
