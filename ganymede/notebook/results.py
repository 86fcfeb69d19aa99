"""Named results: the values a notebook publishes for whoever ran it (the run contract).

A result is a ``display_data`` (or ``execute_result``) output carrying one of:

- ``application/vnd.ganymede.result+json``: ``{"name", "value"}`` (``ganymede.kernel.result``);
- scrapbook's ``application/scrapbook.scrap.json+json`` / ``...text+json``:
  ``{"name", "data", "encoder", "version"}`` (``scrapbook.glue``);
- papermill's legacy ``application/papermill.record+json``: ``{name: value, ...}``.

Outputs are read in notebook order and the last output of a name wins, as scrapbook reads them.
Results are plain JSON data; nothing here ever renders or trusts them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

RESULT_MIME = "application/vnd.ganymede.result+json"
SCRAPBOOK_MIMES = (
    "application/scrapbook.scrap.json+json",
    "application/scrapbook.scrap.text+json",
)
PAPERMILL_RECORD_MIME = "application/papermill.record+json"

_RESULT_OUTPUT_TYPES = ("display_data", "execute_result")


def results_of_output(output: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The ``(name, value)`` pairs one output publishes, in the order they should apply."""
    if output.get("output_type") not in _RESULT_OUTPUT_TYPES:
        return []
    data = output.get("data") or {}
    found: list[tuple[str, Any]] = []
    own = data.get(RESULT_MIME)
    if isinstance(own, Mapping) and isinstance(own.get("name"), str) and "value" in own:
        found.append((own["name"], own["value"]))
    for mime in SCRAPBOOK_MIMES:
        scrap = data.get(mime)
        if isinstance(scrap, Mapping) and isinstance(scrap.get("name"), str) and "data" in scrap:
            found.append((scrap["name"], scrap["data"]))
    record = data.get(PAPERMILL_RECORD_MIME)
    if isinstance(record, Mapping):
        found.extend((name, value) for name, value in record.items() if isinstance(name, str))
    return found


def read_results(cells: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Every named result of a notebook's cells; the last output of a name wins."""
    results: dict[str, Any] = {}
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs") or []:
            for name, value in results_of_output(output):
                results.pop(name, None)  # keep insertion order = order of the winning output
                results[name] = value
    return results
