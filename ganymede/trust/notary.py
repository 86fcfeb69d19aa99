"""Trust on files: sign or check each notebook with nbformat's notary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.sign import NotebookNotary

from ganymede.errors import NotebookNotFound
from ganymede.notebook.nbio import parse_notebook


@dataclass(frozen=True)
class TrustReport:
    """What became of one notebook: trusted after the call, and whether this call signed it."""

    path: str
    trusted: bool
    signed_now: bool


def _load(path: Path) -> nbformat.NotebookNode:
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise NotebookNotFound(str(path)) from None
    return notebook_of(text, str(path))


def notebook_of(data: bytes, path: str) -> nbformat.NotebookNode:
    """The notebook as jupyter_server loads it (nbformat 4), so both compute the same signature."""
    return nbformat.from_dict(parse_notebook(data, path))


def is_signed(data: bytes, path: str) -> bool:
    """Whether these notebook bytes carry a signature the notary knows (blocking: SQLite)."""
    with NotebookNotary() as notary:
        return bool(notary.check_signature(notebook_of(data, path)))


def sign_data(data: bytes, path: str) -> None:
    """Sign exactly these notebook bytes, as they read back from the file (blocking: SQLite)."""
    with NotebookNotary() as notary:
        notary.sign(notebook_of(data, path))


def sign_files(paths: list[Path], notary: NotebookNotary | None = None) -> list[TrustReport]:
    """Sign every notebook not signed yet; all are read first, so one bad file signs nothing."""
    notary = notary or NotebookNotary()
    notebooks = [(path, _load(path)) for path in paths]
    reports = []
    for path, notebook in notebooks:
        already = notary.check_signature(notebook)
        if not already:
            notary.sign(notebook)
        reports.append(TrustReport(str(path), trusted=True, signed_now=not already))
    return reports


def check_files(paths: list[Path], notary: NotebookNotary | None = None) -> list[TrustReport]:
    """Whether each notebook's signature is in the notary's database."""
    notary = notary or NotebookNotary()
    return [
        TrustReport(str(path), trusted=notary.check_signature(_load(path)), signed_now=False)
        for path in paths
    ]
