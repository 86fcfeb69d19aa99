"""Running pip in the environment ``ganymede serve`` runs in, and reading what it says back."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ganymede.errors import PackageError

# pip prints its reason as "ERROR: …"; a failed build adds a boxed "error: <code>" line.
_ERROR_LINE = re.compile(r"^\s*(?:ERROR|error):\s*(?P<reason>\S.*)$")


@dataclass(frozen=True)
class Installed:
    """One distribution an install put in place, as pip's ``--report`` describes it."""

    name: str
    version: str
    requested: bool


def run_pip(arguments: Sequence[str], on_output: Callable[[str], None] | None = None) -> None:
    """Run ``python -m pip`` with ``arguments``; raise PackageError with pip's reason if it fails.

    pip's stdout and stderr are merged and read line by line, so a caller can stream them (to
    stderr, keeping stdout for our own report) and the failure reason is still at hand.
    """
    environment = {
        **os.environ,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",  # a prompt would hang a command with no one to answer it
        "PYTHONIOENCODING": "utf-8",
    }
    lines: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-m", "pip", *arguments],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=environment,
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if on_output is not None:
                on_output(line)
    if process.returncode != 0:
        raise PackageError(failure_reason(lines, process.returncode))


def failure_reason(lines: Iterable[str], status: int) -> str:
    """The line of pip's output that says why it failed (its last error line)."""
    text = [line.rstrip() for line in lines if line.strip()]
    errors = [match["reason"] for line in text if (match := _ERROR_LINE.match(line))]
    if errors:
        return errors[-1]
    if text:
        return f"pip exited with status {status}: {text[-1].strip()}"
    return f"pip exited with status {status}"


def installed_by_report(report: dict[str, Any]) -> list[Installed]:
    """What a pip ``--report`` JSON document says was installed (empty if nothing changed)."""
    return [
        Installed(item["metadata"]["name"], item["metadata"]["version"], bool(item["requested"]))
        for item in report.get("install", ())
    ]
