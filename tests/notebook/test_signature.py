"""The signature digest against nbformat's notary, which `jupyter trust` and jupyter_server use."""

from __future__ import annotations

import copy
import json
from typing import Any

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nbformat.sign import NotebookNotary

from ganymede.notebook.nbio import parse_notebook
from ganymede.notebook.signature import signature_digest
from tests.notebook.golden import GOLDEN_NOTEBOOK, assert_golden

SECRET = b"a fixed secret, so the golden digest is stable"
GOLDEN = GOLDEN_NOTEBOOK / "signature"


def nbformat_digest(notebook: dict[str, Any], algorithm: str = "sha256") -> str:
    """What nbformat computes, on its own NotebookNode copy of the notebook."""
    notary = NotebookNotary(secret=SECRET, db_file=":memory:", algorithm=algorithm)
    with notary:
        return notary.compute_signature(nbformat.from_dict(copy.deepcopy(notebook)))


def test_golden_digest_of_a_parsed_notebook_matches_nbformat() -> None:
    notebook = parse_notebook((GOLDEN / "signed.ipynb").read_bytes(), "signed.ipynb")
    digest = signature_digest(notebook, SECRET, "sha256")
    assert digest == nbformat_digest(notebook)
    assert_golden(digest + "\n", GOLDEN / "signed.digest")


def test_as_nbformat_reads_the_file_the_digest_is_the_same() -> None:
    """jupyter_server checks what ``nbformat.reads`` gives; the room checks its own parse."""
    text = (GOLDEN / "signed.ipynb").read_text(encoding="utf-8")
    theirs = nbformat.reads(text, as_version=4)
    ours = parse_notebook(text.encode("utf-8"), "signed.ipynb")
    with NotebookNotary(secret=SECRET, db_file=":memory:") as notary:
        assert signature_digest(ours, SECRET, "sha256") == notary.compute_signature(theirs)


def test_the_stored_signature_is_left_out_and_the_notebook_unchanged() -> None:
    notebook = json.loads((GOLDEN / "signed.ipynb").read_text(encoding="utf-8"))
    before = copy.deepcopy(notebook)
    with_signature = signature_digest(notebook, SECRET, "sha256")
    assert notebook == before
    del notebook["metadata"]["signature"]
    assert signature_digest(notebook, SECRET, "sha256") == with_signature


@pytest.mark.parametrize("algorithm", ["sha256", "sha512", "md5", "sha1"])
def test_every_algorithm_the_notary_offers(algorithm: str) -> None:
    notebook = json.loads((GOLDEN / "signed.ipynb").read_text(encoding="utf-8"))
    expected = nbformat_digest(notebook, algorithm)
    assert signature_digest(notebook, SECRET, algorithm) == expected


def test_a_changed_output_changes_the_digest() -> None:
    notebook = json.loads((GOLDEN / "signed.ipynb").read_text(encoding="utf-8"))
    before = signature_digest(notebook, SECRET, "sha256")
    notebook["cells"][1]["outputs"][1]["text"][0] = "line 0\n"
    assert signature_digest(notebook, SECRET, "sha256") != before


JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    metadata=st.dictionaries(st.text(), JSON_VALUES, max_size=4),
    cells=st.lists(st.dictionaries(st.text(), JSON_VALUES, max_size=5), max_size=4),
)
def test_any_json_notebook_digests_as_nbformat_does(
    metadata: dict[str, Any], cells: list[dict[str, Any]]
) -> None:
    notebook = {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    assert signature_digest(notebook, SECRET, "sha256") == nbformat_digest(notebook)
