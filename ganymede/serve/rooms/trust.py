"""Which outputs a notebook room may vouch for, and signing what it saves when it may.

A notebook's signature says "every output in here was made by someone this machine trusts", so
JupyterLab renders its HTML and runs its scripts. The room signs a file it writes only when that
holds for every code cell (nbformat's rule: a cell without rich output needs no trust). It
follows each cell's outputs as they change:

- read from a signed file, or trusted as a whole (Trust Notebook): trusted;
- read from an unsigned file, or merged in from an unsigned version of it: not trusted;
- written by a room client: trusted only if every rich output's data is one a kernel of this
  server sent a client (a person's run over the kernel websocket, whose outputs JupyterLab
  writes into the room itself: see ``ganymede.trust.outputs``) or one this room already
  trusted (a cell moved, pasted or undone, an output copied to another cell). A client making
  up outputs, or writing back the very outputs an unsigned file had, gets them untrusted;
- a client marking the cell ``trusted`` (JupyterLab's own Trust Notebook, and its run of an
  untrusted cell): trusted;
- written by the server after ``trust_outputs(cell_id)`` (a run on this server): trusted;
  written by the server otherwise: not trusted.

JupyterLab decides whether to render a cell's HTML and run its scripts from the cell's
``metadata.trusted``, read once as it builds the cell (on opening or reloading the notebook), so
the room marks every code cell whose outputs it trusts and unmarks the others, as
jupyter_server marks cells when it reads a signed notebook. Files never hold the mark: it is
dropped on save.

The notary is SQLite: checking and signing run in a worker thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import Counter
from collections.abc import Callable
from enum import Enum
from typing import Any

from pycrdt import ArrayEvent, Map, MapEvent

from ganymede.errors import InvalidNotebook
from ganymede.serve.rooms.document import (
    DocumentKind,
    RoomDocument,
    read_shared,
    shared_cells,
)
from ganymede.trust import is_signed, sign_data
from ganymede.trust.outputs import (
    RICH_OUTPUT_TYPES,
    Fingerprint,
    KernelOutputs,
    output_fingerprint,
    rich_fingerprints,
)

KEYS_WITHOUT_RICH_DATA = frozenset({"output_type", "execution_count", "metadata"})


class Writer(Enum):
    """Who made the change a room's document is taking."""

    CLIENT = "client"
    FILE = "file"  # the room's own changes to cells: another program's change, merged in
    SERVER = "server"  # code of this server writing into the room directly


class CellTrust(Enum):
    TRUSTED = "trusted"
    UNTRUSTED = "untrusted"
    CLIENT = "client"  # trusted if a kernel of this server, or this room, vouches for them
    SERVER_RUN = "server run"  # trusted, and so is what the server writes next


async def file_signed(document: RoomDocument, data: bytes, path: str) -> bool:
    """Whether this version of a room's file carries a signature the notary knows (a text file:
    never). InvalidNotebook or UnicodeDecodeError if it cannot be read. It is parsed through
    the document, so the load or merge that follows takes the parse from there."""
    if document.kind is not DocumentKind.NOTEBOOK:
        return False
    notebook = document.parse(data, path)
    return await asyncio.to_thread(is_signed, notebook)


def needs_trust(outputs: list[Any]) -> bool:
    """nbformat's ``_check_cell``: only rich data (HTML, scripts, images…) needs trusting."""
    return any(output_needs_trust(output) for output in outputs)


def output_needs_trust(output: Any) -> bool:
    """The rule for one output: a rich type carrying more than the keys any output may."""
    return (
        isinstance(output, dict)
        and output.get("output_type") in RICH_OUTPUT_TYPES
        and not set(output) <= KEYS_WITHOUT_RICH_DATA
    )


class OutputTrust:
    """The trust of each code cell's outputs in one notebook room, kept in server memory.

    ``writer`` tells, while a change is being applied, who made it (the room knows);
    ``kernel_outputs`` what the server's kernels sent their clients.

    Client-written outputs are judged when the room next checks (a save, a marking), not as
    they arrive: a client streaming a long run's output must not cost a read of the cell's
    outputs per message. They come from a kernel before they reach the client, so what a
    check does not find then will not turn up later: the cell is then untrusted until its
    outputs change again. Outputs found trusted are vouched for by the room from then on, by
    their fingerprints, kept per cell (the last outputs each cell was trusted with), so what
    the room remembers is bounded by what the notebook holds and the cells it has had.
    """

    def __init__(
        self,
        document: RoomDocument,
        writer: Callable[[], Writer],
        log: logging.Logger,
        kernel_outputs: KernelOutputs,
    ) -> None:
        self._document = document
        self._writer = writer
        self._log = log
        self._kernel_outputs = kernel_outputs
        self._cells: dict[str, CellTrust] = {}
        self._vouched: dict[str, frozenset[Fingerprint]] = {}  # cell id: its trusted outputs
        self._vouched_count: Counter[Fingerprint] = Counter()  # over every cell's
        self._found_untrusted = False  # client outputs judged untrusted since the last marking
        self._file_signed = False  # the last version of the file read: signed?
        self._checked_ahead: tuple[bytes, bool] | None = None  # a version read ahead: signed?
        self._captured: tuple[bytes, bool] | None = None  # last bytes serialised, all trusted?
        self._signed_digest: bytes | None = None  # of the bytes last signed
        self._subscription = None
        self._enabled = document.kind is DocumentKind.NOTEBOOK
        self.watch()

    def watch(self) -> None:
        """Judge the cells' changes from now on: at the start, and each time the room's
        document is live again after being packed away (``close`` before that)."""
        if self._enabled and self._subscription is None:
            cells = self._document.shared.ycells
            self._subscription = cells.observe_deep(self._on_cells_change)

    @property
    def enabled(self) -> bool:
        return self._enabled

    def take_loaded(self, content: Any, cell_ids: list[str], signed: bool) -> None:
        """Judge the outputs the room opened with by the file's signature: the document was
        filled from ``content`` (its cells given ``cell_ids``) and, if ``signed``, its code
        cells marked trusted as it was filled, so nothing is read back or marked here."""
        if not self.enabled:
            return
        self._file_signed = signed
        for cell_id, cell in zip(cell_ids, content["cells"], strict=False):
            if cell.get("cell_type") == "code":
                self._take_from_file(cell_id, cell.get("outputs") or [])

    async def vet_file(self, data: bytes, path: str) -> None:
        """Check the signature of a version of the file before its outputs are taken in."""
        if not self.enabled:
            return
        checked, self._checked_ahead = self._checked_ahead, None
        if checked is not None and checked[0] == data:
            self._file_signed = checked[1]
            return
        try:
            self._file_signed = await file_signed(self._document, data, path)
        except (InvalidNotebook, UnicodeDecodeError):
            self._file_signed = False  # the merge will refuse it too

    async def check_ahead(self, data: bytes, path: str) -> None:
        """Check a version read ahead of its taking in, so the next ``vet_file`` of it need not
        (the answer is at most a settling time old, and used once)."""
        if self.enabled:
            self._checked_ahead = (data, await file_signed(self._document, data, path))

    def trust_outputs(self, cell_id: str) -> None:
        """A run on this server writes this cell's outputs: trust them, and what it writes next."""
        self._cells[cell_id] = CellTrust.SERVER_RUN

    def trust_all(self) -> None:
        """A person trusts the notebook: every output it holds now, and any like them later."""
        for cell_id, outputs in self._code_cells():
            self._cells[cell_id] = CellTrust.TRUSTED
            self._vouch(cell_id, outputs)

    def all_trusted(self) -> bool:
        """Whether every code cell's outputs are trusted or harmless, as the document is now."""
        return all(
            not needs_trust(outputs) or self._is_trusted(cell_id, outputs)
            for cell_id, outputs in self._code_cells()
        )

    def mark_cells(self) -> None:
        """Set each code cell's ``metadata.trusted`` to whether its outputs are trusted; the
        caller makes this one transaction of the room's own. Cells already right are left
        alone, so nothing changes (and no update goes out) when no trust changed."""
        self._found_untrusted = False
        if not self.enabled:
            return
        # Judged on one JSON read of every cell (reading cell by cell crosses into Rust per
        # key); only the cells whose mark is wrong are touched.
        ycells = self._document.shared.ycells
        for index, cell in enumerate(shared_cells(self._document.shared)):  # type: ignore[arg-type]
            metadata = cell.get("metadata")
            if cell.get("cell_type") != "code" or not isinstance(metadata, dict):
                continue
            trusted = self._is_trusted(str(cell.get("id")), cell.get("outputs") or [])
            wrong = metadata.get("trusted") is not True if trusted else "trusted" in metadata
            if not wrong:
                continue
            shared_metadata = ycells[index].get("metadata")
            if not isinstance(shared_metadata, Map):
                continue
            if trusted:
                shared_metadata["trusted"] = True
            else:
                del shared_metadata["trusted"]

    @property
    def marks_stale(self) -> bool:
        """Whether a check found a client's outputs untrusted since cells were last marked: the
        cell may still carry the ``trusted`` mark, which a page opened now would believe."""
        return self._found_untrusted

    def capture(self, data: bytes) -> None:
        """The room serialised ``data`` to save it: judge it now, before any await."""
        if self.enabled:
            self._captured = (data, self.all_trusted())

    async def sign_saved(self, saved: bytes, path: str) -> None:
        """The file holds ``saved``: sign it if it is what was captured, all trusted."""
        # Used once: the bytes, as large as the file, are not kept past the save that made them.
        captured, self._captured = self._captured, None
        if captured is None or captured[0] is not saved or not captured[1]:
            return
        await self._sign(saved, path)

    async def sign_unwritten(self, on_disk: bytes, path: str) -> None:
        """A save found nothing to write, the file holding the room's content spelled its own
        way (another program's key order, say): sign those bytes if every output is trusted,
        since the room's own spelling of them is not what the file holds."""
        if self.enabled and self.all_trusted():
            await self._sign(on_disk, path)

    async def _sign(self, saved: bytes, path: str) -> None:
        digest = hashlib.sha256(saved).digest()
        if digest == self._signed_digest:
            return
        try:
            await asyncio.to_thread(sign_data, saved, path)
        except Exception:  # a broken notary must not break saving
            self._log.exception("room %s: saved, but could not sign it", path)
            return
        self._signed_digest = digest
        self._log.info("%s: saved and signed (every output is trusted)", path)

    def close(self) -> None:
        if self._subscription is not None:
            self._document.shared.ycells.unobserve(self._subscription)
            self._subscription = None

    def _is_trusted(self, cell_id: str, outputs: list[Any]) -> bool:
        state = self._cells.get(cell_id, CellTrust.UNTRUSTED)
        if state is CellTrust.CLIENT:
            state = self._judge_client_outputs(cell_id, outputs)
            self._cells[cell_id] = state
            self._found_untrusted = self._found_untrusted or state is CellTrust.UNTRUSTED
        return state is not CellTrust.UNTRUSTED

    def _judge_client_outputs(self, cell_id: str, outputs: list[Any]) -> CellTrust:
        """Trusted if every rich output is one a kernel of this server sent, or one the room
        already trusts; then the room vouches for them as this cell's."""
        fingerprints = []
        for output in outputs:
            if not output_needs_trust(output):
                continue
            fingerprint = output_fingerprint(output)
            if fingerprint is None or not (
                fingerprint in self._kernel_outputs or self._vouched_count[fingerprint]
            ):
                return CellTrust.UNTRUSTED
            fingerprints.append(fingerprint)
        self._vouch_fingerprints(cell_id, frozenset(fingerprints))
        return CellTrust.TRUSTED

    def _vouch(self, cell_id: str, outputs: list[Any]) -> None:
        """The room trusts these outputs of the cell's (a signed file's, a person's word)."""
        self._vouch_fingerprints(cell_id, frozenset(rich_fingerprints(outputs)))

    def _vouch_fingerprints(self, cell_id: str, fingerprints: frozenset[Fingerprint]) -> None:
        count = self._vouched_count
        for fingerprint in self._vouched.pop(cell_id, frozenset()):
            count[fingerprint] -= 1
            if not count[fingerprint]:
                del count[fingerprint]
        count.update(fingerprints)
        if fingerprints:
            self._vouched[cell_id] = fingerprints

    def _take_from_file(self, cell_id: str, outputs: list[Any]) -> None:
        if self._file_signed:
            self._cells[cell_id] = CellTrust.TRUSTED
            self._vouch(cell_id, outputs)
        else:
            self._cells[cell_id] = CellTrust.UNTRUSTED

    def _code_cells(self) -> list[tuple[str, list[Any]]]:
        cells = shared_cells(self._document.shared)  # type: ignore[arg-type]
        return [
            (str(cell.get("id")), cell.get("outputs") or [])
            for cell in cells
            if cell.get("cell_type") == "code"
        ]

    def _on_cells_change(self, events: list[ArrayEvent | MapEvent]) -> None:
        """Every change to a cell's outputs sets who vouches for them now."""
        writer = self._writer()
        cells = self._document.shared.ycells
        for event in events:
            if not event.path:  # cells inserted: their outputs came with them
                for change in event.delta:  # type: ignore[union-attr]
                    for cell in change.get("insert", ()):
                        if isinstance(cell, Map) and cell.get("cell_type") == "code":
                            self._outputs_changed(writer, cell)
                continue
            cell = cells[event.path[0]]
            if cell.get("cell_type") != "code":
                continue
            inside = event.path[1:2]
            if inside == ["outputs"] or (not inside and "outputs" in event.keys):  # type: ignore[union-attr]
                self._outputs_changed(writer, cell)
            elif event.path[1:] == ["metadata"] and writer is Writer.CLIENT:
                change = event.keys.get("trusted")  # type: ignore[union-attr]
                if change is not None and change.get("newValue") is True:
                    cell_id, outputs = _code_cell_outputs(cell)
                    self._cells[cell_id] = CellTrust.TRUSTED
                    self._vouch(cell_id, outputs)

    def _outputs_changed(self, writer: Writer, cell: Map) -> None:
        """Only outputs from the file are read here: a client's are judged at the next check."""
        cell_id = str(cell.get("id"))
        if writer is Writer.CLIENT:
            self._cells[cell_id] = CellTrust.CLIENT
        elif writer is Writer.FILE:
            self._take_from_file(*_code_cell_outputs(cell))
        elif self._cells.get(cell_id) is not CellTrust.SERVER_RUN:
            self._cells[cell_id] = CellTrust.UNTRUSTED


def _code_cell_outputs(cell: Map) -> tuple[str, list[Any]]:
    outputs = cell.get("outputs")
    return str(cell.get("id")), read_shared(outputs) if outputs is not None else []
