"""A room's document: the file's content in the shared schema JupyterLab edits, and back.

Notebooks live in jupyter_ydoc's ``YNotebook``, text files in ``YUnicode``, so the unchanged
JupyterLab frontend reads and edits them. Besides the content, the document's ``state`` map
tells the frontend the file's ``path``, whether the tab has unsaved edits (``dirty``) and the
contents API ``hash`` of what is on disk, which keeps JupyterLab from showing a false "file
changed" dialog on its next save. Pure conversions; the room does the I/O.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from jupyter_ydoc import YNotebook, YUnicode
from jupyter_ydoc.ybasedoc import YBaseDoc
from pycrdt import Doc

from ganymede.errors import UsageError
from ganymede.notebook.nbio import dumps_notebook, parse_notebook


class DocumentKind(Enum):
    """The ``format``/``type`` pairs the docprovider asks rooms for."""

    NOTEBOOK = ("json", "notebook")
    TEXT = ("text", "file")

    @classmethod
    def of(cls, format_: str | None, type_: str | None) -> DocumentKind:
        for kind in cls:
            if kind.value == (format_, type_):
                return kind
        known = ", ".join(f"{kind.format}:{kind.type}" for kind in cls)
        raise UsageError(f"no documents of format {format_!r} and type {type_!r} (known: {known})")

    @property
    def format(self) -> str:
        return self.value[0]

    @property
    def type(self) -> str:
        return self.value[1]


class RoomDocument:
    """One file's content as a shared document, loaded once when its room opens."""

    def __init__(self, kind: DocumentKind) -> None:
        self.kind = kind
        self.shared: YBaseDoc = YNotebook() if kind is DocumentKind.NOTEBOOK else YUnicode()

    @property
    def doc(self) -> Doc:
        return self.shared.ydoc

    def load(self, data: bytes, path: str, file_hash: str) -> None:
        """Fill the empty document from the file's bytes (InvalidNotebook or
        UnicodeDecodeError if they are not what ``kind`` says), in one transaction."""
        content = self._parse(data, path)
        with self.doc.transaction():
            self.shared.set(content)
            self.shared.path = path
            # set() drops every state key but dirty, path and document_id: the hash goes after.
            self.mark_saved(file_hash, clean=True)

    def to_bytes(self) -> bytes:
        """The document as Jupyter writes its file."""
        if self.kind is DocumentKind.NOTEBOOK:
            return dumps_notebook(self.shared.get()).encode("utf-8")
        return str(self.shared.get()).encode("utf-8")

    def mark_saved(self, file_hash: str, *, clean: bool) -> None:
        """Tell the frontend what the file now holds; ``clean`` clears its unsaved dot.

        Only keys that change are written, so a save that changes nothing sends no update.
        """
        if self.shared.hash != file_hash:
            self.shared.hash = file_hash
        if clean and self.shared.dirty is not False:
            self.shared.dirty = False

    def _parse(self, data: bytes, path: str) -> Any:
        if self.kind is DocumentKind.NOTEBOOK:
            return parse_notebook(data, path)
        return data.decode("utf-8")
