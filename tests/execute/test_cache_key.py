"""The run cache's key (what it covers and what it ignores) and the notebook a hit writes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.kernelspec import NATIVE_KERNEL_NAME

from ganymede.errors import UsageError
from ganymede.execute.cache_key import (
    NATIVE_KERNEL,
    InputDigest,
    cache_key,
    declared_inputs,
    from_cache,
)
from ganymede.execute.parameters import INJECTED_TAG, inject_parameters
from tests.execute.notebooks import notebook

GOLDEN = Path(__file__).parent / "golden" / "cache"
OPTIONS: dict[str, Any] = {
    "params": {"n": 3},
    "kernel_name": None,
    "inject": True,
    "allow_errors": False,
}


def base() -> dict[str, Any]:
    nb = notebook(("n = 1", ["parameters"]), "print(n)", "n * 2")
    for number, cell in enumerate(nb["cells"]):
        cell["id"] = f"code-{number}"
    nb["cells"].insert(1, {"cell_type": "markdown", "id": "prose", "metadata": {}, "source": "Hi"})
    return nb


def key(nb: dict[str, Any], **changes: Any) -> str:
    return cache_key(nb, **{**OPTIONS, **changes})


def test_the_key_of_a_fixed_notebook_is_pinned() -> None:
    """Changing what the key covers must bump KEY_VERSION, or old entries would answer."""
    assert key(base()) == (GOLDEN / "key.txt").read_text().strip()


def test_outputs_prose_and_metadata_leave_the_key_alone() -> None:
    edited = base()
    edited["cells"][1]["source"] = "Other prose"
    edited["cells"].append({"cell_type": "raw", "metadata": {}, "source": "raw"})
    edited["cells"][2]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
    edited["cells"][2]["execution_count"] = 7
    edited["cells"][2]["metadata"] = {"collapsed": True, "tags": ["mine"]}
    edited["cells"][2]["id"] = "another"
    edited["metadata"]["language_info"] = {"name": "python", "version": "3.11"}
    edited["metadata"]["widgets"] = {"state": {}}
    assert key(edited) == key(base())


def test_a_previous_runs_injected_cell_is_not_part_of_the_key() -> None:
    rerun = inject_parameters(base(), {"n": 9})
    assert key(rerun) == key(base())


def test_without_injection_the_injected_cell_runs_so_it_counts() -> None:
    rerun = inject_parameters(base(), {"n": 9})
    assert key(rerun, inject=False) != key(base(), inject=False)


def changed_sources() -> list[dict[str, Any]]:
    edited, reordered, tagged, retagged = base(), base(), base(), base()
    edited["cells"][2]["source"] = "print(n) "
    reordered["cells"][2], reordered["cells"][3] = reordered["cells"][3], reordered["cells"][2]
    tagged["cells"][3]["metadata"]["tags"] = ["skip-execution"]
    retagged["cells"][0]["metadata"]["tags"] = []
    return [edited, reordered, tagged, retagged]


@pytest.mark.parametrize("changed", changed_sources(), ids=["source", "order", "skip", "params"])
def test_code_order_and_the_tags_a_run_obeys_change_the_key(changed: dict[str, Any]) -> None:
    assert key(changed) != key(base())


@pytest.mark.parametrize(
    "changes",
    [
        {"params": {"n": 4}},
        {"params": {}},
        {"kernel_name": "other"},
        {"allow_errors": True},
        {"inject": False},
        {"inputs": [InputDigest("data.csv", (("data.csv", "0" * 64),))]},
    ],
    ids=["param-value", "no-params", "kernel", "allow-errors", "no-inject", "inputs"],
)
def test_every_run_option_that_shapes_outputs_changes_the_key(changes: dict[str, Any]) -> None:
    assert key(base(), **changes) != key(base())


def test_input_contents_and_matches_change_the_key() -> None:
    one = [InputDigest("*.csv", (("a.csv", "1" * 64),))]
    edited = [InputDigest("*.csv", (("a.csv", "2" * 64),))]
    more = [InputDigest("*.csv", (("a.csv", "1" * 64), ("b.csv", "3" * 64)))]
    none = [InputDigest("*.csv", ())]
    keys = {key(base(), inputs=inputs) for inputs in (one, edited, more, none)}
    assert len(keys) == 4


def test_the_kernel_is_keyed_by_name_and_language() -> None:
    other_language = base()
    other_language["metadata"]["kernelspec"]["language"] = "R"
    assert key(other_language) != key(base())
    spelled_python = base()
    spelled_python["metadata"]["kernelspec"]["name"] = "python"
    assert key(spelled_python) == key(base())
    unnamed = base()
    del unnamed["metadata"]["kernelspec"]
    unnamed["metadata"]["language_info"] = {"name": "python"}
    assert key(unnamed) == key(base())


def test_the_native_kernel_is_jupyter_clients() -> None:
    assert NATIVE_KERNEL == NATIVE_KERNEL_NAME


def test_parameters_that_are_not_json_are_refused() -> None:
    with pytest.raises(UsageError, match="JSON"):
        key(base(), params={"n": object()})


def test_declared_inputs() -> None:
    nb = base()
    assert declared_inputs(nb) == []
    nb["metadata"]["ganymede"] = {"inputs": ["data/*.csv", "config.toml"]}
    assert declared_inputs(nb) == ["data/*.csv", "config.toml"]


@pytest.mark.parametrize("inputs", ["data.csv", [1], [""], {"a": "b"}])
def test_declared_inputs_that_are_not_a_list_of_paths_are_refused(inputs: Any) -> None:
    nb = base()
    nb["metadata"]["ganymede"] = {"inputs": inputs}
    with pytest.raises(UsageError, match=r"metadata\.ganymede\.inputs"):
        declared_inputs(nb)


def executed(nb: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """``nb`` as a run leaves it: injected cell, an output per code cell, run metadata."""
    ran = inject_parameters(nb, params)
    for cell in ran["cells"]:
        if INJECTED_TAG in cell["metadata"].get("tags", []):
            cell["id"] = "injected"
    for count, cell in enumerate(c for c in ran["cells"] if c["cell_type"] == "code"):
        cell["execution_count"] = count + 1
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": f"out {count}\n"}]
        cell["metadata"]["execution"] = {"iopub.status.idle": f"2026-01-01T00:00:0{count}Z"}
    ran["metadata"]["language_info"] = {"name": "python", "version": "3.11.0"}
    ran["metadata"]["papermill"] = {"parameters": params}
    ran["metadata"]["ganymede"] = {"run": {"status": "ok", "duration": 1.5, "params": params}}
    return ran


def test_a_hit_lays_the_cached_outputs_over_the_notebook_asked_for() -> None:
    cached = executed(base(), {"n": 3})
    asked = base()
    asked["cells"][1]["source"] = "Prose edited since the run"
    asked["metadata"]["authors"] = ["someone"]
    merged = from_cache(asked, cached, params={"n": 3}, kernel_name=None, inject=True)
    assert merged is not None
    golden = json.loads((GOLDEN / "hit.json").read_text())
    assert merged == golden


def test_a_hit_replaces_the_injected_cell_a_previous_run_left_in_place() -> None:
    cached = executed(base(), {"n": 3})
    in_place = copy.deepcopy(cached)  # the file a previous in-place run wrote
    merged = from_cache(in_place, cached, params={"n": 3}, kernel_name=None, inject=True)
    assert merged is not None
    injected = [c for c in merged["cells"] if INJECTED_TAG in c["metadata"].get("tags", [])]
    assert len(injected) == 1
    assert injected[0]["outputs"] == cached["cells"][1]["outputs"]


def test_a_cached_run_whose_code_does_not_line_up_is_no_hit() -> None:
    cached = executed(base(), {"n": 3})
    cached["cells"][3]["source"] = "something else"
    assert from_cache(base(), cached, params={"n": 3}, kernel_name=None, inject=True) is None


def test_a_notebook_without_a_kernelspec_keys_as_the_file_its_run_writes() -> None:
    bare = base()
    del bare["metadata"]["kernelspec"]
    ran = copy.deepcopy(bare)
    ran["metadata"]["kernelspec"] = {"name": "python3", "display_name": "P", "language": "python"}
    ran["metadata"]["language_info"] = {"name": "python"}
    assert key(bare) == key(ran) == key(base())


def test_a_hit_keeps_the_kernelspec_asked_for_and_fills_in_a_missing_one() -> None:
    cached = executed(base(), {})
    renamed = base()
    renamed["metadata"]["kernelspec"]["display_name"] = "Renamed since"
    merged = from_cache(renamed, cached, params={}, kernel_name=None, inject=True)
    assert merged is not None
    assert merged["metadata"]["kernelspec"]["display_name"] == "Renamed since"
    bare = base()
    del bare["metadata"]["kernelspec"]
    merged = from_cache(bare, cached, params={}, kernel_name=None, inject=True)
    assert merged is not None
    assert merged["metadata"]["kernelspec"] == cached["metadata"]["kernelspec"]
