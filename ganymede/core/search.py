"""Matching a search query against cells: pure functions, no files.

A query matches case-insensitively as a substring of one line, with runs of whitespace in both
the query and the line counted as one space, so "weekday  drop" finds "weekday drop" and an
indented "weekday\tdrop"; a phrase broken across two lines does not match. The excerpt is that
line, whitespace-collapsed, cut to about ``EXCERPT_WIDTH`` characters around the match.

Searching a tree is dominated by reading files, so ``Query.may_occur_in`` looks for the query in
a file's raw JSON bytes before anything parses it: most notebooks fail that test and are never
parsed. The test may say yes wrongly (the words sit in a key or another cell), never no wrongly.

A ``SearchableNotebook`` is a notebook reduced to what a search reads (each cell's source and
output text, the title's heading), small enough for a long-lived server to keep between searches
and answer from memory; rooms and files alike are searched through it, so one method makes hits.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ganymede.core.documents import source_text, title_of
from ganymede.errors import UsageError

EXCERPT_WIDTH = 160
ELLIPSIS = "…"
# Characters JSON may escape (so they need not appear as themselves in a file) and the only two
# non-ASCII characters whose lower case contains ASCII letters (KELVIN SIGN, DOTTED CAPITAL I).
_JSON_ESCAPABLE = frozenset('"\\/') | frozenset(chr(code) for code in range(0x20))
_NON_ASCII_LOWERING_TO_ASCII = ("\u212a".encode(), "\u0130".encode())
_LETTERS_FROM_NON_ASCII = frozenset("ki")
# A \uXXXX escape that may stand for a character of the needle: Jupyter escapes only control
# characters (ANSI colours in tracebacks), which no needle holds, so those do not count.
_ESCAPED_CHARACTER = re.compile(rb"\\u(?!00[01])")
# Greek sigma lowers differently at the end of a word, which raw JSON may not reproduce.
_CONTEXT_LOWERED = frozenset("σς")


@dataclass(frozen=True)
class Query:
    """A parsed query: ``key`` is what a line must contain (lowered, whitespace collapsed)."""

    key: str
    longest_word: str
    needle: str | None
    """What a file's raw JSON text must contain (lowered), or None when no raw test is safe."""

    @classmethod
    def parse(cls, text: str) -> Query:
        """The query for ``text``; UsageError when it holds nothing but whitespace."""
        if not isinstance(text, str):
            raise UsageError("the search query must be a string")
        key = " ".join(text.split()).lower()
        if not key:
            raise UsageError("the search query is empty")
        return cls(key=key, longest_word=max(key.split(" "), key=len), needle=_raw_needle(key))

    def may_occur_in(self, raw: bytes) -> bool:
        """False only when no cell of the notebook stored as ``raw`` can match."""
        if self.needle is None:
            return True
        ascii_needle = self.needle.isascii()
        if ascii_needle and self.needle.encode() in raw.lower():
            return True
        if _ESCAPED_CHARACTER.search(raw):
            return True
        if ascii_needle and not self._lowered_into_ascii(raw):
            return False
        try:
            return self.needle in raw.decode().lower()
        except UnicodeDecodeError:
            return True

    def _lowered_into_ascii(self, raw: bytes) -> bool:
        """Whether ``raw`` holds a non-ASCII character that lowers into a letter of the needle."""
        return (
            not _LETTERS_FROM_NON_ASCII.isdisjoint(self.needle or "")
            and not raw.isascii()
            and any(special in raw for special in _NON_ASCII_LOWERING_TO_ASCII)
        )

    def excerpt_in(self, text: str) -> str | None:
        """The excerpt of the first line of ``text`` the query matches, or None."""
        if self.longest_word not in text.lower():
            return None
        for line in text.splitlines():
            collapsed = " ".join(line.split())
            start = collapsed.lower().find(self.key)
            if start >= 0:
                return excerpt(collapsed, start, len(self.key))
        return None


class SearchableCell(NamedTuple):
    """One cell as search reads it; ``outputs`` is empty unless the cell is code.

    A tuple, not a frozen dataclass: a server's first search makes one per cell of the tree,
    and this builds several times faster.
    """

    index: int
    kind: Any
    """The cell's ``cell_type`` as stored, whatever it is: a hit reports it unchanged."""
    id: str | None
    source: str
    outputs: str


@dataclass(frozen=True, slots=True)
class SearchableNotebook:
    """A notebook reduced to the text a search looks at.

    ``lowered`` is every cell's text lowered and joined by newlines (which no lowering rule looks
    across), so a query whose longest word is not in it matches no cell and costs one ``in``.
    """

    heading: str
    """The title's heading, "" when the notebook has none and hits take the file's stem."""
    cells: tuple[SearchableCell, ...]
    lowered: str

    @classmethod
    def of(cls, notebook: Mapping[str, Any]) -> SearchableNotebook:
        cells = tuple(_searchable_cell(index, cell) for index, cell in enumerate(_cells(notebook)))
        texts = [text for cell in cells for text in (cell.source, cell.outputs) if text]
        return cls(title_of(notebook, ""), cells, "\n".join(texts).lower())

    @property
    def size(self) -> int:
        """About how many characters keeping this notebook costs, its key and stamp included."""
        return 256 + 2 * len(self.lowered) + 64 * len(self.cells)

    def may_match(self, query: Query) -> bool:
        """False when no cell can match ``query``: the quick test a search makes of every file."""
        return query.longest_word in self.lowered

    def hits(
        self,
        api_path: str,
        stem: str,
        query: Query,
        outputs: bool,
        cell_type: str | None,
    ) -> Iterator[dict[str, Any]]:
        """One hit per cell and place ("source", "outputs") the query matches, in cell order."""
        for cell in self.cells:
            if cell_type is not None and cell.kind != cell_type:
                continue
            found = [("source", query.excerpt_in(cell.source))]
            if outputs and cell.kind == "code":
                found.append(("outputs", query.excerpt_in(cell.outputs)))
            for place, excerpt in found:
                if excerpt is not None:
                    yield {
                        "path": api_path,
                        "title": self.heading or stem,
                        "index": cell.index,
                        "id": cell.id,
                        "cell_type": cell.kind,
                        "in": place,
                        "excerpt": excerpt,
                    }


EMPTY_NOTEBOOK = SearchableNotebook(heading="", cells=(), lowered="")
"""What search keeps of a file that is not a notebook: nothing can match in it."""


def _cells(notebook: Mapping[str, Any]) -> list[Any]:
    cells = notebook.get("cells")
    return cells if isinstance(cells, list) else []


def _searchable_cell(index: int, cell: Mapping[str, Any]) -> SearchableCell:
    kind = cell.get("cell_type")
    cell_id = cell.get("id")
    outputs = cell.get("outputs") if kind == "code" else None
    return SearchableCell(
        index,
        kind,
        cell_id if isinstance(cell_id, str) else None,
        source_text(cell),
        outputs_text(outputs) if outputs else "",
    )


def _raw_needle(key: str) -> str | None:
    """The longest piece of ``key`` that must appear verbatim in the file's JSON text."""
    pieces: list[str] = []
    current: list[str] = []
    for char in key:
        if char in _JSON_ESCAPABLE or char.isspace():
            pieces.append("".join(current))
            current = []
        else:
            current.append(char)
    pieces.append("".join(current))
    needle = max(pieces, key=len)
    if not needle or _CONTEXT_LOWERED.intersection(needle):
        return None
    return needle


def excerpt(line: str, start: int, length: int, width: int = EXCERPT_WIDTH) -> str:
    """``line`` cut to ``width`` characters centred on the match, marked "…" where cut."""
    if len(line) <= width:
        return line
    centre = start + length // 2
    begin = max(0, min(centre - width // 2, len(line) - width))
    end = begin + width
    head = ELLIPSIS if begin > 0 else ""
    tail = ELLIPSIS if end < len(line) else ""
    return f"{head}{line[begin:end]}{tail}"


def outputs_text(outputs: Sequence[Mapping[str, Any]]) -> str:
    """The searchable text of a cell's outputs: streams, plain text, Markdown and errors."""
    parts: list[str] = []
    for output in outputs:
        if not isinstance(output, Mapping):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(_text(output.get("text")))
        elif kind in ("execute_result", "display_data"):
            data = output.get("data")
            if isinstance(data, Mapping):
                parts.extend(_text(data.get(mime)) for mime in ("text/plain", "text/markdown"))
        elif kind == "error":
            parts.append(f"{_text(output.get('ename'))}: {_text(output.get('evalue'))}")
    return "\n".join(part for part in parts if part)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(item for item in value if isinstance(item, str))
    return ""
