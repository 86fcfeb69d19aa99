"""Trust on files: sign or check each notebook with nbformat's notary.

The notary supplies the secret, the algorithm and the database of trusted digests, shared with
``jupyter trust`` and jupyter_server; the digest itself is ``signature_digest``, computed on the
notebook as parsed (nbformat 4, transient keys dropped), as jupyter_server reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nbformat.sign import NotebookNotary

from ganymede.errors import NotebookNotFound
from ganymede.notebook.nbio import parse_notebook
from ganymede.notebook.signature import signature_digest

Notebook = Mapping[str, Any]


@dataclass(frozen=True)
class TrustReport:
    """What became of one notebook: trusted after the call, and whether this call signed it."""

    path: str
    trusted: bool
    signed_now: bool


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise NotebookNotFound(str(path)) from None
    return parse_notebook(text, str(path))


def _digest(notary: NotebookNotary, notebook: Notebook) -> str:
    return signature_digest(notebook, notary.secret, notary.algorithm)


def _is_known(notary: NotebookNotary, notebook: Notebook) -> bool:
    return bool(notary.store.check_signature(_digest(notary, notebook), notary.algorithm))


def _sign(notary: NotebookNotary, notebook: Notebook) -> None:
    notary.store.store_signature(_digest(notary, notebook), notary.algorithm)


def is_signed(notebook: Notebook) -> bool:
    """Whether a parsed notebook (``parse_notebook``'s data) carries a signature the notary
    knows (blocking: SQLite)."""
    with NotebookNotary() as notary:
        return _is_known(notary, notebook)


def sign_data(data: bytes, path: str) -> None:
    """Sign exactly these notebook bytes, as they read back from the file (blocking: SQLite)."""
    notebook = parse_notebook(data, path)
    with NotebookNotary() as notary:
        _sign(notary, notebook)


def sign_files(paths: list[Path], notary: NotebookNotary | None = None) -> list[TrustReport]:
    """Sign every notebook not signed yet; all are read first, so one bad file signs nothing."""
    notary = notary or NotebookNotary()
    notebooks = [(path, _load(path)) for path in paths]
    reports = []
    for path, notebook in notebooks:
        already = _is_known(notary, notebook)
        if not already:
            _sign(notary, notebook)
        reports.append(TrustReport(str(path), trusted=True, signed_now=not already))
    return reports


def check_files(paths: list[Path], notary: NotebookNotary | None = None) -> list[TrustReport]:
    """Whether each notebook's signature is in the notary's database."""
    notary = notary or NotebookNotary()
    return [
        TrustReport(str(path), trusted=_is_known(notary, _load(path)), signed_now=False)
        for path in paths
    ]
