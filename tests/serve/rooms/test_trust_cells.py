"""Who vouches for each cell's outputs, followed change by change on a real room document."""

from __future__ import annotations

import logging
from typing import Any

import nbformat
import pytest
from nbformat.sign import NotebookNotary
from nbformat.v4 import new_code_cell, new_notebook, new_output
from pycrdt import Map

from ganymede.serve.rooms.document import DocumentKind, RoomDocument
from ganymede.serve.rooms.trust import OutputTrust, Writer, file_signed, needs_trust, outputs_hash

HTML = {"text/html": "<b>x</b>", "text/plain": "x"}
OUTPUTS: list[dict[str, Any]] = [
    dict(new_output("stream", name="stdout", text="hi\n")),
    dict(new_output("error", ename="E", evalue="v", traceback=[])),
    dict(new_output("execute_result", data=HTML, execution_count=1)),
    dict(new_output("display_data", data=HTML)),
    {"output_type": "display_data", "metadata": {}},
]


@pytest.mark.parametrize("output", OUTPUTS, ids=lambda output: output["output_type"])
def test_needs_trust_is_nbformats_rule(output: dict[str, Any]) -> None:
    cell = new_code_cell("x")
    cell.outputs = [nbformat.from_dict(output)]
    with NotebookNotary() as notary:
        assert needs_trust([output]) is not notary._check_cell(cell, 4)


class Room:
    """A notebook document and its trust, with the writer of the next change settable."""

    def __init__(self, *, signed: bool) -> None:
        cell = new_code_cell("show()", id="c1")
        cell.outputs = [new_output("display_data", data=HTML)]
        notebook = new_notebook(cells=[cell])
        self.data = nbformat.writes(notebook).encode()
        if signed:
            with NotebookNotary() as notary:
                notary.sign(nbformat.reads(self.data, as_version=4))
        self.document = RoomDocument(DocumentKind.NOTEBOOK)
        self.writer = Writer.CLIENT
        self.trust = OutputTrust(self.document, lambda: self.writer, logging.getLogger(__name__))

    async def load(self) -> None:
        """As a room opens: the signature first, then the fill, then the trust takes it in."""
        signed = await file_signed(self.document, self.data, "nb.ipynb")
        cell_ids = self.document.load(self.data, "nb.ipynb", "hash", trusted=signed)
        self.trust.take_loaded(self.document.parse(self.data, "nb.ipynb"), cell_ids, signed)

    def write_outputs(self, writer: Writer, html: str) -> None:
        self.writer = writer
        outputs = self.document.shared.ycells[0]["outputs"]
        with self.document.doc.transaction():
            outputs.clear()
            outputs.append(Map(dict(new_output("display_data", data={"text/html": html}))))


async def test_a_signed_file_is_trusted_and_an_unsigned_one_is_not() -> None:
    assert not (await loaded(signed=False)).trust.all_trusted()
    assert (await loaded(signed=True)).trust.all_trusted()


async def test_server_writes_are_trusted_only_after_trust_outputs() -> None:
    room = await loaded(signed=True)
    room.write_outputs(Writer.SERVER, "<i>unvouched</i>")
    assert not room.trust.all_trusted()
    room.trust.trust_outputs("c1")
    assert room.trust.all_trusted()
    room.write_outputs(Writer.SERVER, "<i>the same run, later</i>")
    assert room.trust.all_trusted()


async def test_outputs_merged_in_from_a_file_follow_its_signature() -> None:
    room = await loaded(signed=True)
    room.write_outputs(Writer.FILE, "<i>another program</i>")
    assert room.trust.all_trusted()  # the last version vetted was signed
    await room.trust.vet_file(nbformat.writes(new_notebook()).encode(), "nb.ipynb")
    room.write_outputs(Writer.FILE, "<i>another program, unsigned</i>")
    assert not room.trust.all_trusted()
    room.write_outputs(Writer.CLIENT, "<i>another program, unsigned</i>")
    assert not room.trust.all_trusted()  # written back as they were: still not trusted


async def test_a_client_marking_a_cell_trusted_vouches_for_its_outputs() -> None:
    room = await loaded(signed=False)
    room.writer = Writer.CLIENT
    room.document.shared.ycells[0]["metadata"]["trusted"] = True
    assert room.trust.all_trusted()


async def loaded(*, signed: bool) -> Room:
    room = Room(signed=signed)
    await room.load()
    return room


def test_outputs_hash_alike_as_parsed_and_as_read_from_the_document() -> None:
    """A file's ``10.0`` comes back from the document as ``10``: still the same outputs."""
    parsed = [{"output_type": "display_data", "data": HTML, "metadata": {"width": 10.0}}]
    read_back = [{"output_type": "display_data", "data": HTML, "metadata": {"width": 10}}]
    assert outputs_hash(parsed) == outputs_hash(read_back)
