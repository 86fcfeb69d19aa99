"""A room's document: the file's content in the shared schema JupyterLab edits, and back.

Notebooks live in jupyter_ydoc's ``YNotebook``, text files in ``YUnicode``, so the unchanged
JupyterLab frontend reads and edits them; every other type registered in the ``jupyter_ydoc``
entry points (a chat, a CAD model) lives in its own class, filled by its ``set()`` and read back
by its ``get()``. Besides the content, the document's ``state`` map tells the frontend the
file's ``path``, whether the tab has unsaved edits (``dirty``) and the contents API ``hash`` of
what is on disk, which keeps JupyterLab from showing a false "file changed" dialog on its next
save. Pure conversions; the room does the I/O.

Reading a notebook out goes through yrs's own JSON writer (one pass in Rust) instead of
jupyter_ydoc's ``get()``, which crosses into Rust for every key of every cell: on a notebook of
a few thousand cells that is the difference between tens and hundreds of milliseconds, paid on
every save and every merge.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import jupyter_ydoc
from jupyter_ydoc import YNotebook, YUnicode
from jupyter_ydoc.ybasedoc import YBaseDoc
from pycrdt import Array, Doc, Map, Text

from ganymede.errors import InvalidNotebook, UnreadableDocument, UsageError
from ganymede.notebook.merge import cell_fingerprint
from ganymede.notebook.nbio import dumps_fresh_notebook, parse_notebook_declared
from ganymede.notebook.schema import strip_transient
from ganymede.serve.rooms.notebook_fill import METADATA_DEFAULTS, fill_empty_notebook
from ganymede.serve.rooms.packed import Packed

# The whole numbers yrs keeps (as 64-bit integers).
MIN_LIVE_INT, MAX_LIVE_INT = -(2**63), 2**63 - 1
# The file versions whose parse is kept while a load or a merge works (the base and the version
# taken in or read ahead); a parsed 3 MB notebook with its fingerprints holds about 4 MB, so the
# room lets go of them when it is done (``forget_parses``).
PARSES_KEPT = 2
# Before nbformat 4.5 cells have no ids; jupyter_ydoc's get() leaves them out.
_LAST_MINOR_WITHOUT_IDS = 4
# Registered types are text files to the contents API: their classes read and write strings.
YDOC_FORMAT = "text"
# jupyter_ydoc registers its own classes too: notebooks and files are rooms' own kinds, and a
# blob is bytes (``base64``), which no class's ``set()`` here takes.
_NOT_REGISTERED_KINDS = frozenset({"notebook", "file", "blob"})


@dataclass(frozen=True)
class DocumentKind:
    """A ``format``/``type`` pair the docprovider asks rooms for, and the shared schema it gets.

    Notebooks (``json:notebook``) and text files (``text:file``) are rooms' own; every other
    type is one a package registered in the ``jupyter_ydoc`` entry points (jupyterlab-chat's
    ``chat``, JupyterCAD's ``jcad``, ...), asked for as ``text:<type>``, and read and written
    only through its class's ``set()`` and ``get()``. ``of`` hands out the two built-in kinds
    as the constants below, so they compare with ``is``.
    """

    format: str
    type: str

    NOTEBOOK: ClassVar[DocumentKind]
    TEXT: ClassVar[DocumentKind]

    @classmethod
    def of(cls, format_: object, type_: object) -> DocumentKind:
        """The kind for a pair; UsageError naming the pair for one nothing registered."""
        for kind in (cls.NOTEBOOK, cls.TEXT):
            if (kind.format, kind.type) == (format_, type_):
                return kind
        registered = registered_types()
        if format_ == YDOC_FORMAT and isinstance(type_, str) and type_ in registered:
            return cls(YDOC_FORMAT, type_)
        known = ", ".join(
            [f"{kind.format}:{kind.type}" for kind in (cls.NOTEBOOK, cls.TEXT)]
            + [f"{YDOC_FORMAT}:{name}" for name in sorted(registered)]
        )
        raise UsageError(f"no documents of format {format_!r} and type {type_!r} (known: {known})")

    @property
    def registered(self) -> bool:
        """Whether the type is one rooms know only through its ``jupyter_ydoc`` class."""
        return self is not DocumentKind.NOTEBOOK and self is not DocumentKind.TEXT

    def new_shared(self, ydoc: Doc | None = None) -> YBaseDoc:
        """A document of the kind's shared schema, over ``ydoc`` or an empty one."""
        if self is DocumentKind.NOTEBOOK:
            return YNotebook(ydoc)
        if self is DocumentKind.TEXT:
            return YUnicode(ydoc)
        return ydoc_classes()[self.type](ydoc)


DocumentKind.NOTEBOOK = DocumentKind("json", "notebook")
DocumentKind.TEXT = DocumentKind("text", "file")


def ydoc_classes() -> dict[str, type[YBaseDoc]]:
    """What the ``jupyter_ydoc`` entry points register, by type (read once, at its import)."""
    return dict(jupyter_ydoc.ydocs)


def registered_types() -> frozenset[str]:
    """The types a room opens through their registered class (not notebooks, not ``file``)."""
    return frozenset(ydoc_classes()) - _NOT_REGISTERED_KINDS


NOTHING_TO_UNDO = object()
"""The only origin the document's undo manager records: no transaction has it."""


def _without_undo(shared: YBaseDoc) -> YBaseDoc:
    """jupyter_ydoc gives every document an undo manager recording every transaction, for an
    editor's undo. A room has no undo, and that stack would keep every edit, and every item
    deleted since the room opened, alive until it closes: it records nothing here."""
    shared.undo_manager.include_origin(NOTHING_TO_UNDO)
    return shared


class RoomDocument:
    """One file's content as a shared document, loaded once when its room opens."""

    def __init__(self, kind: DocumentKind) -> None:
        self.kind = kind
        self._shared: YBaseDoc | None = _without_undo(kind.new_shared())
        # The document given up by ``pack_away``, its client id, and the path it showed.
        self._packed_away: tuple[Packed, int, str] | None = None
        self.used_at = time.monotonic()
        """When ``shared`` was last asked for: how long the document has gone unused."""
        self.on_unpack: Callable[[], None] | None = None
        """Called once ``shared`` is live again after ``pack_away``, before anyone uses it."""
        # The last file versions parsed: the bytes a merge takes in now are the base of the
        # next one, which then need not be parsed again, and a version read ahead while the
        # file settles is parsed before the merge asks for it.
        self._parsed: list[ParsedVersion] = []
        # What the document shows only because a filled document must (see ``Invented``).
        self._invented = Invented()

    @property
    def shared(self) -> YBaseDoc:
        """The live document, rebuilt first if it was packed away."""
        self.used_at = time.monotonic()
        if self._shared is None:
            return self._unpack()
        return self._shared

    def expect_use(self) -> None:
        """A client is about to use the document (its cursor moved): count it as used, and
        rebuild it now if it is packed away, rather than on the keystroke that follows."""
        self.used_at = time.monotonic()
        if self._shared is None:
            self._unpack()

    @property
    def doc(self) -> Doc:
        return self.shared.ydoc

    @property
    def notebook(self) -> YNotebook:
        """``shared``, for callers that hold a notebook's room (an assertion checks it)."""
        shared = self.shared
        assert isinstance(shared, YNotebook), f"a {self.kind.type} document is no notebook"
        return shared

    @property
    def packed_away(self) -> Packed | None:
        """The document's update while ``pack_away`` has it (None while it is live)."""
        return self._packed_away[0] if self._packed_away is not None else None

    @property
    def path(self) -> str:
        """The path the document shows its clients, read without unpacking it."""
        if self._packed_away is not None:
            return self._packed_away[2]
        return str(self.shared.path)

    def pack_away(self) -> None:
        """Give up the live document for its update, packed: a Y document costs about four
        times its file in memory, its packed update about a tenth of it.

        The next ``shared`` rebuilds it whole, under the same client id, so clients' state
        vectors still match it and the room's own changes go on from its own clock. Whoever
        observes the document must unobserve it first: a subscription holds it alive.
        """
        assert self._shared is not None, "packed away already"
        doc = self._shared.ydoc
        self._packed_away = (Packed(doc.get_update()), doc.client_id, str(self._shared.path))
        self._shared = None

    def _unpack(self) -> YBaseDoc:
        assert self._packed_away is not None
        packed, client_id, _ = self._packed_away
        doc = Doc(client_id=client_id)
        doc.apply_update(packed.unpack())
        self._shared = shared = _without_undo(self.kind.new_shared(doc))
        self._packed_away = None
        if self.on_unpack is not None:
            self.on_unpack()
        return shared

    def load(self, data: bytes, path: str, file_hash: str, *, trusted: bool = False) -> list[str]:
        """Fill the empty document from the file's bytes (InvalidNotebook or
        UnicodeDecodeError if they are not what ``kind`` says), in one transaction (a registered
        type's clean mark in a second); the ids of
        the notebook's cells, in order (none for other files).

        ``trusted``: the file is signed, so every code cell is marked trusted (see ``trust``).
        """
        content = self.parse(data, path)
        self.took_in(data, path)
        with self.doc.transaction():
            if isinstance(self.shared, YNotebook) and content["cells"]:
                cell_ids = fill_empty_notebook(self.shared, content, trusted=trusted)
            elif self.kind.registered:
                set_registered(self.shared, self.kind, content, path)
                cell_ids = []
            else:
                self.shared.set(content)
                cells = self.shared.ycells if isinstance(self.shared, YNotebook) else []
                cell_ids = [str(cell.get("id")) for cell in cells]
                if cell_ids:  # the empty cell set() gives a notebook without any
                    self._invented = dataclasses.replace(self._invented, cell_id=cell_ids[0])
            self.shared.path = path
            if not self.kind.registered:
                # set() drops every state key but dirty, path and document_id: the hash goes
                # after.
                self.mark_saved(file_hash, clean=True)
        if self.kind.registered:
            # A registered class may read the dirty flag its constructor set while its content
            # is set: jupyterlab-chat's YChat stamps and reorders messages added to a clean
            # chat, and skips that while the document is being read. Marked clean in the same
            # transaction, every message of the file would be stamped anew and moved.
            self.mark_saved(file_hash, clean=True)
        return cell_ids

    def content(self) -> Any:
        """What ``shared.get()`` returns (a fresh notebook dict or the text), read faster, as
        its file should hold it: without the cells' trust marks (JupyterLab's, and dropped by
        every reader) or what the document invented."""
        if self.kind is DocumentKind.NOTEBOOK:
            content = notebook_content(self.shared)  # type: ignore[arg-type]
            strip_transient(content)
            return without_invented(content, self._invented)
        return str(self.shared.get())

    def read_version(self, data: bytes, path: str) -> YBaseDoc:
        """A version of a registered type's file in a scratch document of its class, to merge
        from (UnreadableDocument or UnicodeDecodeError when the class cannot read it).

        A class that reads a file it cannot parse as an empty document (jupyterlab-chat's
        does) would make a half-written file look like everything was deleted: a file that is
        not blank but reads as nothing is refused as unreadable.
        """
        scratch = self.kind.new_shared()
        text = self.parse(data, path)
        set_registered(scratch, self.kind, text, path)
        if text.strip() and all(len(root) == 0 for root in content_roots(scratch).values()):
            raise UnreadableDocument(path, self.kind.type, "it reads as an empty document")
        return scratch

    def took_in(self, data: bytes, path: str) -> None:
        """The file now holds ``data`` (loaded or merged in): what it lacks of what a document
        shows is invented, and stays out of the file until someone changes it."""
        if self.kind is DocumentKind.NOTEBOOK:
            content = self.parse(data, path)
            cell_id = None if content["cells"] else self._invented.cell_id
            self._invented = Invented(invented_metadata(content), cell_id)

    def as_shown(self, content: dict[str, Any]) -> dict[str, Any]:
        """A merged notebook as the document shows it: with what it invented, so that bringing
        the document to it leaves those parts alone."""
        invented = self._invented
        missing = {k: v for k, v in invented.metadata.items() if k not in content["metadata"]}
        shown = dict(content)
        if missing:
            shown["metadata"] = {**copy.deepcopy(missing), **content["metadata"]}
        if invented.cell_id is not None and not content["cells"]:
            shown["cells"] = [invented.cell()]
        return shown

    def content_later(self, update: bytes | None = None) -> Callable[[], Any]:
        """``content()`` of the document as it is now, worked out only when called.

        The document's update is taken now (one quick pass in Rust); reading it back, which on
        a long notebook costs tens of milliseconds, waits until someone asks. A room opening
        remembers this way what it loaded without making its first client wait for it.
        """
        if update is None:  # else the caller took it just now
            update = self.doc.get_update()
        # As large as the file, and perhaps never read: kept packed meanwhile.
        packed, kind, invented = Packed(update), self.kind, self._invented

        def content() -> Any:
            then = RoomDocument(kind)
            then.doc.apply_update(packed.unpack())
            then._invented = invented
            return then.content()

        return content

    def copy(self) -> RoomDocument:
        """A document of the same kind holding what this one holds now (not its history's
        identity: edits to either stay apart)."""
        other = RoomDocument(self.kind)
        other.doc.apply_update(self.doc.get_update())
        return other

    def to_bytes(self) -> bytes:
        """The document as Jupyter writes its file."""
        return self.serialise(self.content())

    def serialise(self, content: Any) -> bytes:
        """A fresh ``content()`` as Jupyter writes its file (the content is used up)."""
        if self.kind is DocumentKind.NOTEBOOK:
            return dumps_fresh_notebook(content).encode("utf-8")
        return str(content).encode("utf-8")

    def mark_saved(self, file_hash: str, *, clean: bool) -> None:
        """Tell the frontend what the file now holds; ``clean`` clears its unsaved dot.

        Only keys that change are written, so a save that changes nothing sends no update.
        """
        if self.shared.hash != file_hash:
            self.shared.hash = file_hash
        if clean and self.shared.dirty is not False:
            self.shared.dirty = False

    def parse(self, data: bytes, path: str) -> Any:
        """The file's bytes as ``kind`` reads them (InvalidNotebook or UnicodeDecodeError).

        Results are remembered and handed out again for the same bytes, so callers must not
        change them.
        """
        return self._parse(data, path).content

    def declared_major(self, data: bytes, path: str) -> int:
        """The nbformat major version a notebook file declares (1-4; ``parse`` upgrades)."""
        return self._parse(data, path).major

    def fingerprints(self, data: bytes, path: str) -> list[str]:
        """The ``cell_fingerprint`` of each cell of a notebook version, remembered with it."""
        version = self._parse(data, path)
        if version.fingerprints is None:
            version.fingerprints = [cell_fingerprint(cell) for cell in version.content["cells"]]
        return version.fingerprints

    def parse_apart(self, data: bytes, path: str) -> ParsedVersion:
        """``parse`` and ``fingerprints`` of a version without remembering it: safe in a worker
        thread, since it touches nothing of the document's. ``remember`` it afterwards."""
        if self.kind is DocumentKind.NOTEBOOK:
            content, major = _parse_live_notebook(data, path)
            prints = [cell_fingerprint(cell) for cell in content["cells"]]
            return ParsedVersion(data, content, major, prints)
        return ParsedVersion(data, data.decode("utf-8"), 0)

    def forget_parses(self) -> None:
        """A load or a merge is done: its parses go (the next merge parses its base again, or
        finds it read ahead while the file settles)."""
        self._parsed = []

    def remember(self, version: ParsedVersion) -> None:
        if not any(known.data == version.data for known in self._parsed):
            self._parsed = [*self._parsed[-(PARSES_KEPT - 1) :], version]

    def _parse(self, data: bytes, path: str) -> ParsedVersion:
        for known in self._parsed:
            if known.data == data:
                return known
        if self.kind is DocumentKind.NOTEBOOK:
            content, major = _parse_live_notebook(data, path)
            version = ParsedVersion(data, content, major)
        else:
            version = ParsedVersion(data, data.decode("utf-8"), 0)
        self.remember(version)
        return version


@dataclass
class ParsedVersion:
    """One version of the file: its bytes, what they parse to, the nbformat major version they
    declare, and the cells' fingerprints once worked out."""

    data: bytes
    content: Any
    major: int
    fingerprints: list[str] | None = None


def shared_cells(notebook: YNotebook) -> list[dict[str, Any]]:
    """Every shared cell as JSON data, ``execution_state`` included (see ``read_shared``)."""
    return read_shared(notebook.ycells)


def read_shared(value: Array | Map) -> Any:
    """A shared value as JSON data, as ``to_py`` reads it but in one pass and with whole numbers
    as ints (Yjs keeps every number as a float)."""
    return _from_json(str(value))


def keeps_cell_ids(notebook: YNotebook) -> bool:
    """Whether the notebook's file keeps its cells' ids: before nbformat 4.5 it does not, and
    a room opened on it again gives its cells new ones."""
    meta = notebook.ydoc.get("meta", type=Map)
    return not _without_cell_ids(int(meta.get("nbformat", 0)), int(meta.get("nbformat_minor", 0)))


def _without_cell_ids(major: int, minor: int) -> bool:
    """Whether a notebook of this format is saved without cell ids (before 4.5)."""
    return major == 4 and minor <= _LAST_MINOR_WITHOUT_IDS


def notebook_content(notebook: YNotebook) -> dict[str, Any]:
    """jupyter_ydoc's ``YNotebook.get()``, from one JSON read of the cells and one of the meta.

    ``get()`` also renames cells that share an id, writing the new ids into the document; a
    notebook with such cells is left to it, so that stays exactly as it was.
    """
    meta = read_shared(notebook.ydoc.get("meta", type=Map))
    major, minor = int(meta.get("nbformat", 0)), int(meta.get("nbformat_minor", 0))
    cells = shared_cells(notebook)
    without_ids = _without_cell_ids(major, minor)
    if not without_ids:
        ids = [cell["id"] for cell in cells if cell.get("id")]
        if len(ids) != len(set(ids)):
            return notebook.get()
    for cell in cells:
        cell.pop("execution_state", None)
        if without_ids:
            cell.pop("id", None)
        if (
            "attachments" in cell
            and cell["cell_type"] in ("raw", "markdown")
            and not cell["attachments"]
        ):
            del cell["attachments"]
    return {
        "cells": cells,
        "metadata": meta.get("metadata", {}),
        "nbformat": major,
        "nbformat_minor": minor,
    }


@dataclass(frozen=True)
class Invented:
    """What a notebook's document shows that its file lacks: jupyter_ydoc's ``set()`` (and so
    the fill) gives every notebook a ``kernelspec`` and a ``language_info``, blank where the
    file has none, and a notebook without cells one empty code cell (``cell_id``)."""

    metadata: dict[str, Any] = field(default_factory=dict)
    cell_id: str | None = None

    def cell(self) -> dict[str, Any]:
        """The empty cell as ``set()`` makes it."""
        empty = {"cell_type": "code", "execution_count": None, "metadata": {"trusted": True}}
        return empty | {"outputs": [], "source": "", "id": self.cell_id}


def invented_metadata(content: dict[str, Any]) -> dict[str, Any]:
    """The metadata keys a document filled from ``content`` shows that ``content`` lacks, with
    the values it shows them with."""
    metadata = content.get("metadata", {})
    return {key: value for key, value in METADATA_DEFAULTS.items() if key not in metadata}


def without_invented(content: dict[str, Any], invented: Invented) -> dict[str, Any]:
    """``content`` (trust marks stripped) less what is still as the document invented it: a
    key or the cell a client has changed since is the notebook's own, and kept."""
    metadata = content["metadata"]
    for key, value in invented.metadata.items():
        if key in metadata and metadata[key] == value:
            del metadata[key]
    cells = content["cells"]
    if invented.cell_id is not None and len(cells) == 1:
        untouched = invented.cell() | {"metadata": {}}
        if cells[0] == untouched:
            content["cells"] = []
    return content


def live_value(value: Any) -> Any:
    """JSON data as a document can hold it: a whole number beyond 64 bits (which yrs cannot
    hold, and pycrdt aborts on) becomes a float, as JupyterLab's JavaScript reads it anyway;
    one beyond a float's range, its digits."""
    if isinstance(value, dict):
        return {key: live_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [live_value(item) for item in value]
    if isinstance(value, int) and not MIN_LIVE_INT <= value <= MAX_LIVE_INT:
        try:
            return float(value)
        except OverflowError:
            return str(value)
    return value


def _parse_live_notebook(data: bytes, path: str) -> tuple[dict[str, Any], int]:
    """A notebook file, refused (InvalidNotebook) if it holds a number a document cannot: a
    room would have to change it on the next save, and the file is the source of truth."""

    def live_int(digits: str) -> int:
        number = int(digits)
        if not MIN_LIVE_INT <= number <= MAX_LIVE_INT:
            reason = (
                f"it holds the number {digits[:40]}, beyond the 64 bits a live document keeps; "
                "change it to open the notebook with collaboration"
            )
            raise InvalidNotebook(path, reason)
        return number

    return parse_notebook_declared(data, path, parse_int=live_int)


def as_read_back(value: Any) -> Any:
    """JSON data as ``read_shared`` reads it back once it is in the document (whole numbers
    as ints), so what was parsed from a file compares equal to what the document holds."""
    return _from_json(json.dumps(value))


def _from_json(text: str) -> Any:
    return json.loads(text, parse_float=_whole_as_int)


def _whole_as_int(token: str) -> float | int:
    """jupyter_ydoc's ``cast_all(…, float, int)``, applied as the JSON is read."""
    number = float(token)
    return int(number) if number.is_integer() else number


def set_registered(shared: YBaseDoc, kind: DocumentKind, text: str, path: str) -> None:
    """A registered type's ``set()``, its failures as UnreadableDocument.

    The class is another package's: whatever it raises on a file it cannot read (a
    JSONDecodeError, a KeyError, a ValueError for a newer schema) means the same to a room.
    """
    try:
        shared.set(text)
    except Exception as error:
        raise UnreadableDocument(path, kind.type, str(error) or type(error).__name__) from None


def content_roots(shared: YBaseDoc) -> dict[str, Array | Map | Text]:
    """A document's shared roots but its ``state``: what its file holds."""
    return {
        name: root
        for name, root in shared.ydoc.items()
        if name != "state" and isinstance(root, Array | Map | Text)
    }
