"""Loading notebooks for the core, strictly for reading them and cheaply for scanning many.

``read`` hands a notebook to a caller who may edit it, so it goes through nbformat's validation
(``parse_notebook``). Listing and searching touch every notebook in a tree and only need cells and
metadata: they parse the JSON, check the shape, and skip what does not fit, because full
validation costs milliseconds per notebook and one bad file must never fail a whole listing.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ganymede.errors import InvalidNotebook, NotebookNotFound
from ganymede.notebook.nbio import NBFORMAT_MAJOR, parse_notebook

_HEADING = re.compile(r" {0,3}#{1,6}[ \t]+(.*)")
_CLOSING_HASHES = re.compile(r"[ \t]+#+[ \t]*$")
_FENCE = re.compile(r" {0,3}(```|~~~)")


READ_CHUNK = 1 << 20


def read_raw(real: str | os.PathLike[str]) -> bytes:
    """The file's bytes through bare system calls: a search reads thousands of small files, and
    this is about twice as fast as ``Path.read_bytes`` there. OSError as ``open`` raises it."""
    descriptor = os.open(real, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(descriptor, READ_CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def read_bytes(real: Path, api_path: str) -> bytes:
    """The file's bytes; NotebookNotFound when it is missing, InvalidNotebook when unreadable."""
    try:
        return real.read_bytes()
    except FileNotFoundError:
        raise NotebookNotFound(api_path) from None
    except IsADirectoryError:
        raise InvalidNotebook(api_path, "a directory, not a notebook") from None
    except OSError as error:
        raise InvalidNotebook(api_path, f"cannot be read ({error.strerror or error})") from None


def parse_strict(data: bytes, api_path: str) -> dict[str, Any]:
    """The validated notebook as plain JSON data (dicts and lists), or InvalidNotebook."""
    return to_plain(parse_notebook(data, api_path))


def parse_loose(data: bytes, api_path: str) -> dict[str, Any] | None:
    """The notebook if it has the shape of nbformat 4 (older versions upgraded), else None."""
    try:
        raw = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(raw, dict):
        return None
    version = raw.get("nbformat")
    if version == NBFORMAT_MAJOR:
        cells = raw.get("cells")
        if isinstance(cells, list) and all(isinstance(cell, dict) for cell in cells):
            return raw
        return None
    if isinstance(version, int) and version < NBFORMAT_MAJOR:
        try:
            return parse_strict(data, api_path)
        except InvalidNotebook:
            return None
    return None


def to_plain(value: Any) -> Any:
    """``value`` rebuilt from plain dicts and lists (nbformat hands out NotebookNode subclasses)."""
    if isinstance(value, Mapping):
        return {key: to_plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_plain(item) for item in value]
    return value


def source_text(cell: Mapping[str, Any]) -> str:
    """A cell's source as one string, whether stored as a string or a list of lines."""
    source = cell.get("source", "")
    if isinstance(source, list):
        return "".join(part for part in source if isinstance(part, str))
    return source if isinstance(source, str) else ""


def title_of(notebook: Mapping[str, Any], fallback: str) -> str:
    """The first Markdown heading's text (any level, outside code fences), else ``fallback``."""
    for cell in notebook.get("cells") or []:
        if isinstance(cell, Mapping) and cell.get("cell_type") == "markdown":
            heading = _first_heading(source_text(cell))
            if heading:
                return heading
    return fallback


def _first_heading(markdown: str) -> str | None:
    fenced = False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match:
            text = _CLOSING_HASHES.sub("", match[1]).strip()
            if text:
                return text
    return None


def kernel_of(notebook: Mapping[str, Any]) -> str | None:
    """The kernelspec name in the notebook's metadata, or None."""
    metadata = notebook.get("metadata")
    spec = metadata.get("kernelspec") if isinstance(metadata, Mapping) else None
    name = spec.get("name") if isinstance(spec, Mapping) else None
    return name if isinstance(name, str) and name else None


def iso_utc(timestamp: float) -> str:
    """A POSIX timestamp as ISO 8601 UTC with a "Z", to the millisecond."""
    moment = datetime.fromtimestamp(timestamp, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
