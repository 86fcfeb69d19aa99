"""A room's document keeps no undo history: a long-lived room must not hold every edit and every
deleted item since it opened (jupyter_ydoc's documents record each transaction for an editor).
It keeps the parse of the file's latest versions, for the merges that take them in."""

from __future__ import annotations

import json

import pytest
from jupyter_ydoc import YNotebook, YUnicode
from pycrdt import Map

from ganymede.errors import InvalidNotebook
from ganymede.notebook.merge import cell_fingerprint
from ganymede.serve.rooms.document import PARSES_KEPT, DocumentKind, RoomDocument, live_value

NOTEBOOK = {
    "cells": [
        {"id": "a", "cell_type": "code", "metadata": {}, "source": "x = 1", "outputs": []}
        | {"execution_count": None}
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def test_a_notebook_rooms_document_records_no_undo_step_for_client_or_server_edits() -> None:
    document = RoomDocument(DocumentKind.NOTEBOOK)
    document.load(json.dumps(NOTEBOOK).encode(), "a.ipynb", "hash")
    client = YNotebook()
    client.ydoc.apply_update(document.doc.get_update())
    for n in range(5):
        source = client.ycells[0]["source"]
        source += f"  # client {n}"
        document.doc.apply_update(client.ydoc.get_update(document.doc.get_state()))
        with document.doc.transaction():
            del document.shared.ycells[0]["outputs"][:]  # type: ignore[attr-defined]
    assert str(document.shared.ycells[0]["source"]).endswith("# client 4")  # type: ignore[attr-defined]
    assert document.shared.undo_manager.undo_stack == []


def test_a_text_rooms_document_records_no_undo_step() -> None:
    document = RoomDocument(DocumentKind.TEXT)
    document.load(b"hello", "a.txt", "hash")
    client = YUnicode()
    client.ydoc.apply_update(document.doc.get_update())
    client.set("hello world")
    document.doc.apply_update(client.ydoc.get_update(document.doc.get_state()))
    assert str(document.shared.get()) == "hello world"
    assert document.shared.undo_manager.undo_stack == []


def test_a_version_parsed_apart_is_found_parsed_and_fingerprinted_once_remembered() -> None:
    """What a room reads ahead in a worker thread, its merge then takes without parsing."""
    document = RoomDocument(DocumentKind.NOTEBOOK)
    data = json.dumps(NOTEBOOK).encode()
    version = document.parse_apart(data, "a.ipynb")
    assert version.fingerprints == [cell_fingerprint(NOTEBOOK["cells"][0])]
    document.remember(version)
    assert document.parse(data, "a.ipynb") is version.content
    assert document.fingerprints(data, "a.ipynb") is version.fingerprints


def test_the_parses_kept_are_the_latest_few() -> None:
    document = RoomDocument(DocumentKind.NOTEBOOK)
    versions = []
    for n in range(PARSES_KEPT + 1):
        data = json.dumps({**NOTEBOOK, "metadata": {"n": n}}).encode()
        versions.append((data, document.parse(data, "a.ipynb")))
    latest_data, latest = versions[-1]
    assert document.parse(latest_data, "a.ipynb") is latest
    oldest_data, oldest = versions[0]
    assert document.parse(oldest_data, "a.ipynb") is not oldest  # parsed again


@pytest.mark.parametrize("number", [2**63, -(2**63) - 1, 10**400])
def test_a_notebook_holding_a_number_beyond_64_bits_is_refused_by_name(number: int) -> None:
    """yrs keeps whole numbers in 64 bits, and pycrdt aborts the process's task on a larger one."""
    notebook = {**NOTEBOOK, "metadata": {"widget": {"id": number}}}
    document = RoomDocument(DocumentKind.NOTEBOOK)
    with pytest.raises(InvalidNotebook, match=f"the number {str(number)[:20]}"):
        document.load(json.dumps(notebook).encode(), "a.ipynb", "hash")


def test_numbers_at_the_64_bit_edges_load() -> None:
    notebook = {**NOTEBOOK, "metadata": {"edges": [2**63 - 1, -(2**63)]}}
    document = RoomDocument(DocumentKind.NOTEBOOK)
    document.load(json.dumps(notebook).encode(), "a.ipynb", "hash")
    assert document.content()["metadata"]["edges"] == [2**63 - 1, -(2**63)]


def test_live_value_turns_only_numbers_beyond_64_bits_into_floats() -> None:
    value = {"a": [2**64, -(2**64), 10**400], "b": True, "c": 2**63 - 1, "d": 1.5, "e": "x"}
    assert live_value(value) == {
        "a": [float(2**64), float(-(2**64)), str(10**400)],
        "b": True,
        "c": 2**63 - 1,
        "d": 1.5,
        "e": "x",
    }


def test_metadata_the_document_invents_stays_out_of_the_file() -> None:
    """A notebook without kernelspec or language_info shows both blank (as set() makes them,
    and JupyterLab expects), but its content, saved or compared, is the file's."""
    document = RoomDocument(DocumentKind.NOTEBOOK)
    document.load(json.dumps(NOTEBOOK).encode(), "a.ipynb", "hash")
    shown = document.doc.get("meta", type=Map)["metadata"]
    assert shown["language_info"] == {"name": ""}
    assert shown["kernelspec"] == {"name": "", "display_name": ""}
    assert document.content()["metadata"] == {}
    assert json.loads(document.to_bytes())["metadata"] == {}
    assert document.content_later()()["metadata"] == {}


def test_invented_metadata_a_client_sets_is_the_notebooks_own() -> None:
    document = RoomDocument(DocumentKind.NOTEBOOK)
    document.load(json.dumps(NOTEBOOK).encode(), "a.ipynb", "hash")
    document.doc.get("meta", type=Map)["metadata"]["language_info"] = {"name": "python"}
    assert document.content()["metadata"] == {"language_info": {"name": "python"}}


def test_metadata_the_file_holds_is_kept_even_when_blank() -> None:
    blank = {"kernelspec": {"name": "", "display_name": ""}, "language_info": {"name": ""}}
    document = RoomDocument(DocumentKind.NOTEBOOK)
    document.load(json.dumps(NOTEBOOK | {"metadata": blank}).encode(), "a.ipynb", "hash")
    assert document.content()["metadata"] == blank


def test_the_cells_trust_marks_stay_out_of_the_content() -> None:
    document = RoomDocument(DocumentKind.NOTEBOOK)
    document.load(json.dumps(NOTEBOOK).encode(), "a.ipynb", "hash", trusted=True)
    assert document.shared.ycells[0]["metadata"]["trusted"] is True  # type: ignore[attr-defined]
    assert document.content()["cells"][0]["metadata"] == {}


def test_the_empty_cell_a_notebook_without_cells_shows_stays_out_of_the_file() -> None:
    document = RoomDocument(DocumentKind.NOTEBOOK)
    document.load(json.dumps(NOTEBOOK | {"cells": []}).encode(), "a.ipynb", "hash")
    assert len(document.shared.ycells) == 1  # type: ignore[attr-defined]
    assert document.content()["cells"] == []
    assert json.loads(document.to_bytes())["cells"] == []


def test_the_empty_cell_once_typed_in_is_the_notebooks_own() -> None:
    document = RoomDocument(DocumentKind.NOTEBOOK)
    document.load(json.dumps(NOTEBOOK | {"cells": []}).encode(), "a.ipynb", "hash")
    source = document.shared.ycells[0]["source"]  # type: ignore[attr-defined]
    source += "x = 1"
    assert [cell["source"] for cell in document.content()["cells"]] == ["x = 1"]
