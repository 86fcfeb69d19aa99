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
from ganymede.serve.rooms.trust import OutputTrust, Writer, file_signed, needs_trust
from ganymede.trust.outputs import KernelOutputs, message_fingerprint

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

    def __init__(self, *, signed: bool, cells: int = 1) -> None:
        code_cells = []
        for index in range(cells):
            cell = new_code_cell("show()", id=f"c{index + 1}")
            cell.outputs = [new_output("display_data", data=HTML)]
            code_cells.append(cell)
        notebook = new_notebook(cells=code_cells)
        self.data = nbformat.writes(notebook).encode()
        if signed:
            with NotebookNotary() as notary:
                notary.sign(nbformat.reads(self.data, as_version=4))
        self.document = RoomDocument(DocumentKind.NOTEBOOK)
        self.writer = Writer.CLIENT
        self.kernel_outputs = KernelOutputs()
        self.trust = OutputTrust(
            self.document, lambda: self.writer, logging.getLogger(__name__), self.kernel_outputs
        )

    async def load(self) -> None:
        """As a room opens: the signature first, then the fill, then the trust takes it in."""
        signed = await file_signed(self.document, self.data, "nb.ipynb")
        cell_ids = self.document.load(self.data, "nb.ipynb", "hash", trusted=signed)
        self.trust.take_loaded(self.document.parse(self.data, "nb.ipynb"), cell_ids, signed)

    def write_outputs(self, writer: Writer, html: str, *, index: int = 0) -> None:
        self.writer = writer
        outputs = self.document.shared.ycells[index]["outputs"]
        with self.document.doc.transaction():
            outputs.clear()
            outputs.append(Map(dict(new_output("display_data", data={"text/html": html}))))

    def kernel_sent(self, html: str) -> None:
        """A kernel of the server showed ``html`` to a client over its websocket."""
        self.kernel_outputs.saw("display_data", {"data": {"text/html": html}, "metadata": {}})

    def move_cell(self, to: int) -> None:
        """A client moves the first cell as JupyterLab does: deleted, and a copy inserted."""
        self.writer = Writer.CLIENT
        cells = self.document.shared.ycells
        with self.document.doc.transaction():
            copy = self.document.shared.create_ycell(cells[0].to_py())
            del cells[0]
            cells.insert(to, copy)


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


async def test_client_outputs_are_trusted_only_as_a_kernel_of_the_server_sent_them() -> None:
    room = await loaded(signed=True)
    room.write_outputs(Writer.CLIENT, "<script>made up</script>")
    assert not room.trust.all_trusted()
    room.kernel_sent("<b>ran here</b>")
    room.write_outputs(Writer.CLIENT, "<b>ran here</b>")
    assert room.trust.all_trusted()


async def test_a_client_writing_back_an_unsigned_files_outputs_does_not_trust_them() -> None:
    room = await loaded(signed=False)
    room.write_outputs(Writer.CLIENT, "<b>x</b>")  # what the unsigned file showed
    assert not room.trust.all_trusted()


async def test_trusted_outputs_stay_trusted_when_a_client_moves_or_copies_them() -> None:
    room = Room(signed=True, cells=2)
    await room.load()
    room.move_cell(to=1)
    assert room.trust.all_trusted()
    room.kernel_outputs.limit = 1
    room.kernel_sent("<b>ran here</b>")
    room.write_outputs(Writer.CLIENT, "<b>ran here</b>", index=1)
    assert room.trust.all_trusted()
    room.kernel_sent("<i>a later run</i>")  # the kernels' memory forgets the first
    assert len(room.kernel_outputs) == 1
    room.write_outputs(Writer.CLIENT, "<b>ran here</b>", index=0)  # copied: the room vouches
    assert room.trust.all_trusted()


async def test_a_client_marking_a_cell_trusted_vouches_for_its_outputs() -> None:
    room = await loaded(signed=False)
    room.writer = Writer.CLIENT
    room.document.shared.ycells[0]["metadata"]["trusted"] = True
    assert room.trust.all_trusted()


async def loaded(*, signed: bool) -> Room:
    room = Room(signed=signed)
    await room.load()
    return room


async def test_a_client_output_the_kernel_sent_is_trusted_as_the_document_reads_it_back() -> None:
    """The kernel's ``10.0`` comes back from the document as ``10``: still the same data."""
    room = await loaded(signed=False)
    data = {"application/json": {"width": 10.0}, "text/html": "<b>w</b>"}
    fingerprint = message_fingerprint("display_data", {"data": data})
    assert fingerprint is not None
    room.kernel_outputs.add(fingerprint)
    room.writer = Writer.CLIENT
    with room.document.doc.transaction():
        room.document.shared.ycells[0]["outputs"].clear()
        room.document.shared.ycells[0]["outputs"].append(
            Map(dict(new_output("display_data", data=data)))
        )
    assert room.trust.all_trusted()
