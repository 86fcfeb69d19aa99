"""Executed notebooks made comparable across runners and runs, as nbclient's own tests do.

What differs between two faithful runs of one notebook: the widget model ids (each kernel makes
new ones), the timing stamps' values, how a stream's text was cut into messages (nbclient
keeps one output per message; JupyterLab and ``ganymede execute`` join consecutive ones), the
traceback's colours, and the metadata each runner writes about itself. ``normalise`` takes
those away and keeps everything a reader of the notebook sees. Pure: notebook JSON in and out.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ganymede.execute.ansi import strip_ansi

TIMING_KEYS = {
    "iopub.status.busy",
    "iopub.execute_input",
    "shell.execute_reply",
    "iopub.status.idle",
}
COMPARED_METADATA = ("kernelspec", "widgets")
"""Notebook metadata both runners write or keep; each also stamps its own (run, papermill)."""
RUNNER_CELL_METADATA = ("execution", "papermill", "ganymede")
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
_MODEL_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")


def timing_keys(notebook: dict[str, Any]) -> list[set[str] | None]:
    """Each cell's ``metadata.execution`` keys (None where it has none)."""
    found: list[set[str] | None] = []
    for cell in notebook["cells"]:
        execution = cell.get("metadata", {}).get("execution")
        found.append(None if execution is None else set(execution))
    return found


def normalise(notebook: dict[str, Any]) -> dict[str, Any]:
    """The notebook as a reader sees it, with ids renamed by order of first appearance."""
    cells = [_cell(cell) for cell in notebook["cells"]]
    metadata = {
        key: notebook["metadata"][key] for key in COMPARED_METADATA if key in notebook["metadata"]
    }
    if "widgets" in metadata:
        metadata["widgets"] = _widgets(metadata["widgets"])
    shown = {"cells": cells, "metadata": metadata}
    return json.loads(_rename_model_ids(json.dumps(shown)))


def _cell(cell: dict[str, Any]) -> dict[str, Any]:
    metadata = {k: v for k, v in cell.get("metadata", {}).items() if k not in RUNNER_CELL_METADATA}
    shown: dict[str, Any] = {
        "id": cell.get("id"),
        "source": _text(cell["source"]),
        "metadata": metadata,
    }
    if cell["cell_type"] == "code":
        shown["execution_count"] = cell.get("execution_count")
        shown["outputs"] = outputs(cell.get("outputs", []))
    return shown


def outputs(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Outputs with consecutive streams of one name joined, text as one string, tracebacks plain."""
    joined: list[dict[str, Any]] = []
    for output in items:
        output = json.loads(json.dumps(output))
        kind = output["output_type"]
        if kind == "stream":
            output["text"] = _text(output["text"])
            last = joined[-1] if joined else None
            if last and last["output_type"] == "stream" and last["name"] == output["name"]:
                last["text"] += output["text"]
                continue
        elif kind == "error":
            output["traceback"] = [strip_ansi(line) for line in output["traceback"]]
        elif "data" in output:
            output["data"] = {
                mime: _text(value) if isinstance(value, list) else value
                for mime, value in output["data"].items()
            }
        joined.append(output)
    return joined


def _widgets(widgets: dict[str, Any]) -> dict[str, Any]:
    state = widgets.get(WIDGET_STATE)
    if state is None:
        return widgets
    models = {}
    for model_id, model in state["state"].items():
        model = json.loads(json.dumps(model))
        if isinstance(model.get("state", {}).get("outputs"), list):
            model["state"]["outputs"] = outputs(model["state"]["outputs"])
        models[model_id] = model
    return {**widgets, WIDGET_STATE: {**state, "state": models}}


def _rename_model_ids(text: str) -> str:
    """Widget model ids renamed ``model-N`` in an order both runs share: the models the cells
    show, in the order shown, then the models each refers to (its state's keys sorted), then
    any left by model name and state. Saved state is sorted by id, which is random."""
    shown = json.loads(text)
    states = shown["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    order = list(dict.fromkeys(_MODEL_ID.findall(json.dumps(shown["cells"], sort_keys=True))))
    position = 0
    while position < len(order):
        model = states.get(order[position], {}).get("state", {})
        for key in sorted(model):
            for found in _MODEL_ID.findall(json.dumps(model[key], sort_keys=True)):
                if found not in order:
                    order.append(found)
        position += 1

    def anonymous(model_id: str) -> str:
        return _MODEL_ID.sub("?", json.dumps(states[model_id], sort_keys=True))

    order += sorted((found for found in states if found not in order), key=anonymous)
    names = {model_id: f"model-{number}" for number, model_id in enumerate(order)}
    return _MODEL_ID.sub(lambda match: names.get(match.group(0), "model-?"), text)


def _text(value: str | list[str]) -> str:
    return "".join(value) if isinstance(value, list) else value
