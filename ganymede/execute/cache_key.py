"""What a cached run is keyed on, and how a cached run is laid over the notebook asked for.

Like jupyter-cache, the key hashes what decides a notebook's outputs and nothing else: the code
cells' sources in order (markdown, outputs and cell metadata are left out, so editing prose or
re-saving a run notebook keeps the key), the kernel (name and language, as jupyter-cache hashes
the kernelspec), and, past jupyter-cache, the parameters, the options that change which cells
run, the cell tags that do, and the contents of the files the notebook declares as its inputs.
The injected-parameters cell a previous run left is not part of the key: the parameters are.

No I/O here: ``ganymede.execute.cache`` reads the input files and the store; this module is pure
so a key can be checked against golden values.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ganymede.errors import UsageError
from ganymede.execute.parameters import INJECTED_TAG, PARAMETERS_TAG, has_tag, inject_parameters

KEY_VERSION = 1
"""Bumped whenever what the key covers changes, so old entries are never mistaken for new."""
NATIVE_KERNEL = "python3"
"""jupyter_client's NATIVE_KERNEL_NAME, which it also starts for a kernelspec named ``python``;
spelled out here so computing a key never imports jupyter_client (a test keeps them equal)."""
DEFAULT_KERNEL = NATIVE_KERNEL
KEYED_TAGS = frozenset({PARAMETERS_TAG, "raises-exception", "skip-execution"})
"""Cell tags that change what a run does: where parameters go, which cells run, which may raise."""
RUN_METADATA_KEYS = ("kernelspec", "language_info", "widgets", "papermill")
"""Notebook metadata a run writes (``ganymede.run`` aside), taken from the cached run."""


@dataclass(frozen=True)
class InputDigest:
    """One declared input as the key sees it: the pattern or path as written, and the files it
    matched with the SHA-256 of each one's bytes (no files: the pattern matched nothing yet)."""

    pattern: str
    files: tuple[tuple[str, str], ...]


def kernel_identity(notebook: Mapping[str, Any], kernel_name: str | None) -> tuple[str, str]:
    """The kernel a run of ``notebook`` starts (name as jupyter_client resolves it) and the
    notebook's language (its kernelspec's; for the native kernel, Python; else its
    language_info's; else empty). A notebook that named no kernel keys as the file its run
    writes (with the kernelspec filled in), so rerunning that file in place is a hit."""
    metadata = notebook.get("metadata") or {}
    kernelspec = metadata.get("kernelspec") or {}
    name = kernel_name or kernelspec.get("name") or DEFAULT_KERNEL
    if name == "python":
        name = NATIVE_KERNEL
    language = kernelspec.get("language")
    if not language and name == NATIVE_KERNEL:
        language = "python"  # what a run writes into a notebook that said nothing
    if not language:
        language = (metadata.get("language_info") or {}).get("name")
    return name, str(language or "")


def declared_inputs(notebook: Mapping[str, Any]) -> list[str]:
    """The input patterns a notebook declares in ``metadata.ganymede.inputs`` (relative to its
    directory); UsageError when that is not a list of strings."""
    section = (notebook.get("metadata") or {}).get("ganymede") or {}
    inputs = section.get("inputs", []) if isinstance(section, Mapping) else []
    if not isinstance(inputs, list) or not all(isinstance(item, str) and item for item in inputs):
        raise UsageError("metadata.ganymede.inputs must be a list of file paths or glob patterns")
    return list(inputs)


def injects(notebook: Mapping[str, Any], kernel_name: str | None, inject: bool) -> bool:
    """Whether a run writes the injected-parameters cell (Python kernels only, as the runner)."""
    return inject and kernel_identity(notebook, kernel_name)[1].lower().startswith("python")


def cache_key(
    notebook: Mapping[str, Any],
    *,
    params: Mapping[str, Any],
    kernel_name: str | None,
    inject: bool,
    allow_errors: bool,
    inputs: Sequence[InputDigest] = (),
) -> str:
    """The SHA-256 hex key of a run of ``notebook`` with these options and inputs.

    An injected-parameters cell a previous run left counts only when this run keeps it (no
    injection): otherwise the run replaces it, and the parameters are keyed themselves."""
    name, language = kernel_identity(notebook, kernel_name)
    replaced = injects(notebook, kernel_name, inject)
    cells = [
        {"source": _source(cell), "tags": sorted(set(_tags(cell)) & KEYED_TAGS)}
        for cell in notebook.get("cells", [])
        if cell.get("cell_type") == "code" and not (replaced and has_tag(cell, INJECTED_TAG))
    ]
    keyed = {
        "version": KEY_VERSION,
        "kernel": {"name": name, "language": language},
        "cells": cells,
        "params": params,
        "inject": replaced,
        "allow_errors": allow_errors,
        "inputs": [
            {"pattern": digest.pattern, "files": [list(pair) for pair in digest.files]}
            for digest in inputs
        ],
    }
    try:
        text = json.dumps(keyed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as error:
        raise UsageError(f"parameters must be JSON data: {error}") from None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def from_cache(
    notebook: Mapping[str, Any],
    cached: Mapping[str, Any],
    *,
    params: Mapping[str, Any],
    kernel_name: str | None,
    inject: bool,
) -> dict[str, Any] | None:
    """``notebook`` as the cached run of the same code left it; None when the cached run's code
    cells do not line up with it (then the cache must not answer).

    The cells and metadata are the ones asked for now (prose edited since the run is kept), with
    the injected-parameters cell put where a run puts it, under the cached one's id; each code
    cell takes the outputs, execution count and timings of its counterpart in the cached run,
    matched in order. The
    notebook metadata a run writes comes from the cached run, and ``ganymede.run`` records that
    run with ``cached: true``.
    """
    merged = copy.deepcopy(dict(notebook))
    if injects(notebook, kernel_name, inject):
        merged = inject_parameters(merged, params)
    code = [cell for cell in merged.get("cells", []) if cell.get("cell_type") == "code"]
    ran = [cell for cell in cached.get("cells", []) if cell.get("cell_type") == "code"]
    if [_source(cell) for cell in code] != [_source(cell) for cell in ran]:
        return None
    taken = {cell.get("id") for cell in merged.get("cells", [])}
    for cell, source in zip(code, ran, strict=True):
        if has_tag(cell, INJECTED_TAG) and source.get("id") not in taken | {None}:
            cell["id"] = source["id"]  # the same bytes as the cached run, not a fresh id
        cell["outputs"] = copy.deepcopy(source.get("outputs", []))
        cell["execution_count"] = source.get("execution_count")
        execution = (source.get("metadata") or {}).get("execution")
        cell_metadata = cell.setdefault("metadata", {})
        cell_metadata.pop("execution", None)
        if execution is not None:
            cell_metadata["execution"] = copy.deepcopy(execution)
    merged["metadata"] = _run_metadata(merged.get("metadata") or {}, cached.get("metadata") or {})
    return merged


def _run_metadata(asked: Mapping[str, Any], cached: Mapping[str, Any]) -> dict[str, Any]:
    metadata = {key: value for key, value in asked.items() if key not in RUN_METADATA_KEYS}
    for key in RUN_METADATA_KEYS:
        if key in cached:
            metadata[key] = copy.deepcopy(cached[key])
    if asked.get("kernelspec"):  # a run fills the kernelspec in only where there was none
        metadata["kernelspec"] = copy.deepcopy(asked["kernelspec"])
    section = dict(metadata.get("ganymede") or {})
    run = (cached.get("ganymede") or {}).get("run")
    if run is not None:
        section["run"] = {**copy.deepcopy(run), "cached": True}
        metadata["ganymede"] = section
    return metadata


def _tags(cell: Mapping[str, Any]) -> list[str]:
    tags = (cell.get("metadata") or {}).get("tags") or []
    return [tag for tag in tags if isinstance(tag, str)]


def _source(cell: Mapping[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)
