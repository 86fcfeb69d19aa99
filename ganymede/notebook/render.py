"""The ``@@cell`` text format: a notebook as a model reads it (nb-cli's "ai-notebook" format).

A rendering is blocks separated by one blank line::

    @@notebook {"format":"ai-notebook","metadata":{"kernelspec":{...}}}

    @@cell {"cell_type":"code","execution_count":3,"id":"c1","index":1}
    ```python
    print('hi')
    ```

    @@output {"name":"stdout","output_type":"stream"}
    ```text
    hi
    ```

Headers are compact JSON with sorted keys. Code and outputs are fenced; markdown and raw cells
are not. Where nb-cli's frame breaks, this one holds:

- **Fences** are one backtick longer than the longest backtick run inside (at least three), so a
  source containing three backticks is fenced with four. A reader takes the opening fence and
  reads up to the first line equal to it.
- **Markdown and raw lines starting with ``@@``** (after any backslashes) get one more leading
  backslash: ``@@x`` is shown as ``\\@@x`` and ``\\@@x`` as ``\\\\@@x``. Outside fences, every line
  starting with ``@@`` is therefore a header; a reader removes one backslash from lines matching
  ``^\\\\+@@`` to get the source back. Trailing blank lines of a markdown or raw source are not
  shown (the blank line between blocks would swallow them).

One MIME is shown per output, the first present in ``MIME_PRECEDENCE``. Named results come first
and are always shown as JSON data, never as the HTML a kernel may attach for people. Streams,
tracebacks and ``text/plain`` lose their ANSI colour codes. Images (PNG, JPEG, GIF) are a header
with a ``ref`` and no body; their bytes are returned in ``Rendering.images`` for the caller to
send as image content (other binary MIMEs get the ``ref`` alone). Text longer than ``max_text``
characters shows its first ``max_text`` characters, then, after the fence, the line
``… <rest> more characters: read <ref>``; its header gets ``chars`` (the whole length) and
``ref``. A ref is ``notebook://<path>#<cell id>/outputs/<k>`` (the cell's index when it has no id).

Everything here is pure: the caller reads the notebook and sends the text and images.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from ganymede.notebook.results import PAPERMILL_RECORD_MIME, RESULT_MIME, SCRAPBOOK_MIMES

FORMAT_NAME = "ai-notebook"
REF_SCHEME = "notebook://"
DEFAULT_MAX_TEXT = 4000

WIDGET_MIMES = (
    "application/vnd.jupyter.widget-view+json",
    "application/vnd.jupyter.widget-state+json",
)
IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif")
MIME_PRECEDENCE = (
    RESULT_MIME,
    *SCRAPBOOK_MIMES,
    PAPERMILL_RECORD_MIME,
    *WIDGET_MIMES,
    "text/html",
    "text/markdown",
    "image/svg+xml",
    "text/latex",
    *IMAGE_MIMES,
    "application/javascript",
    "application/json",
    "text/plain",
)
_FENCE_LANGUAGE = {
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "text/latex": "latex",
    "application/javascript": "javascript",
}
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_BACKTICK_RUN = re.compile(r"`+")
_HEADER_LIKE_LINE = re.compile(r"^(\\*@@)", re.MULTILINE)
_REF_TAIL = re.compile(r"#([A-Za-z0-9_-]+)/outputs/(\d+)$")


@dataclass(frozen=True)
class ImageOutput:
    """An image output's bytes, for the caller to send as image content beside the text."""

    ref: str
    mime: str
    data: bytes


@dataclass(frozen=True)
class Rendering:
    """The text a model reads and the images that go with it (named by ``ref`` in the text)."""

    text: str
    images: list[ImageOutput] = field(default_factory=list)


def render_notebook(
    notebook: Mapping[str, Any],
    *,
    path: str,
    cells: Sequence[str | int] | None = None,
    outputs: bool = True,
    max_text: int = DEFAULT_MAX_TEXT,
) -> Rendering:
    """The notebook in the ``@@cell`` format.

    ``cells`` picks cells by id (a ``str``) or index (an ``int``); the others are left out and
    the shown cells keep their true index. Selectors matching no cell are ignored: the door that
    takes them from a model checks them first, with an error in its own terms.
    """
    metadata = notebook.get("metadata") or {}
    language = notebook_language(metadata)
    wanted = set(cells) if cells is not None else None
    blocks = [_notebook_header(metadata)]
    images: list[ImageOutput] = []
    for index, cell in enumerate(notebook.get("cells") or []):
        if wanted is not None and index not in wanted and cell.get("id") not in wanted:
            continue
        rendering = render_cell(
            cell,
            index=index,
            path=path,
            language=language,
            outputs=outputs,
            max_text=max_text,
        )
        blocks.append(rendering.text.rstrip("\n"))
        images.extend(rendering.images)
    return Rendering(text=_join(blocks), images=images)


def render_cell(
    cell: Mapping[str, Any],
    *,
    index: int,
    path: str,
    language: str = "",
    outputs: bool = True,
    max_text: int = DEFAULT_MAX_TEXT,
) -> Rendering:
    """One cell (and its outputs) in the ``@@cell`` format, e.g. to answer an edit with it.

    ``language`` names the code fence (``notebook_language`` gives the notebook's).
    """
    cell_type = cell.get("cell_type", "")
    header: dict[str, Any] = {"cell_type": cell_type, "index": index}
    if cell_type == "code" and cell.get("execution_count") is not None:
        header["execution_count"] = cell["execution_count"]
    if cell.get("id") is not None:
        header["id"] = cell["id"]
    if cell.get("metadata"):
        header["metadata"] = cell["metadata"]
    source = _text(cell.get("source", ""))
    if cell_type == "code":
        body = _fenced(source, language)
    else:
        body = _escape_header_lines(source.rstrip("\n"))
    blocks = [_block("@@cell", header, body)]
    images: list[ImageOutput] = []
    if outputs and cell_type == "code":
        cell_key = str(cell["id"]) if cell.get("id") is not None else str(index)
        for k, output in enumerate(cell.get("outputs") or []):
            ref = output_ref(path, cell_key, k)
            text, image = _render_output(output, ref=ref, max_text=max_text)
            blocks.append(text)
            if image is not None:
                images.append(image)
    return Rendering(text=_join(blocks), images=images)


def notebook_language(metadata: Mapping[str, Any]) -> str:
    """The code fence language: ``language_info.name``, else the kernelspec's, else none."""
    for section, key in (("language_info", "name"), ("kernelspec", "language")):
        value = (metadata.get(section) or {}).get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def output_ref(path: str, cell_key: str, output_index: int) -> str:
    """The pointer to one output: ``notebook://<path>#<cell id>/outputs/<k>``.

    The path is percent-encoded (``/`` kept) so a ``#`` or space in a file name cannot be
    mistaken for the fragment.
    """
    return f"{REF_SCHEME}{quote(path, safe='/')}#{cell_key}/outputs/{output_index}"


def parse_output_ref(ref: str) -> tuple[str, str, int]:
    """``(path, cell key, output index)`` of a ref made by ``output_ref``; ValueError otherwise."""
    tail = _REF_TAIL.search(ref)
    if not ref.startswith(REF_SCHEME) or tail is None:
        raise ValueError(f"not an output ref: {ref!r}")
    path = unquote(ref[len(REF_SCHEME) : tail.start()])
    return path, tail.group(1), int(tail.group(2))


def _notebook_header(metadata: Mapping[str, Any]) -> str:
    shown = {key: metadata[key] for key in ("kernelspec", "language_info") if key in metadata}
    return "@@notebook " + _compact({"format": FORMAT_NAME, "metadata": shown})


def _render_output(
    output: Mapping[str, Any], *, ref: str, max_text: int
) -> tuple[str, ImageOutput | None]:
    """One output's block, and its image when it is one."""
    output_type = output.get("output_type", "")
    header: dict[str, Any] = {"output_type": output_type}
    if output_type == "stream":
        header["name"] = output.get("name", "")
        return _text_block(
            header, _plain(_text(output.get("text", ""))), "text", ref, max_text
        ), None
    if output_type == "error":
        header["ename"] = output.get("ename", "")
        header["evalue"] = output.get("evalue", "")
        traceback = output.get("traceback") or []
        text = "\n".join(map(str, traceback)) if traceback else _error_line(header)
        return _text_block(header, _plain(text), "text", ref, max_text), None
    if output_type == "execute_result" and output.get("execution_count") is not None:
        header["execution_count"] = output["execution_count"]
    data = output.get("data") or {}
    mime = _chosen_mime(data)
    if mime is None:
        return _block("@@output", header, ""), None
    header["mime"] = mime
    value = data[mime]
    if mime in IMAGE_MIMES:
        header["ref"] = ref
        try:
            image = ImageOutput(ref=ref, mime=mime, data=_decoded(value))
        except (binascii.Error, ValueError):
            return _block("@@output", header, "(the image data is not valid base64)"), None
        return _block("@@output", header, ""), image
    if _is_json_mime(mime):
        text, fence = json.dumps(value, ensure_ascii=False), "json"
    elif mime.startswith("text/") or mime in _FENCE_LANGUAGE:
        text, fence = _text(value), _FENCE_LANGUAGE.get(mime, "text")
        if mime == "text/plain":
            text = _plain(text)
    else:
        header["ref"] = ref
        return _block("@@output", header, ""), None
    return _text_block(header, text, fence, ref, max_text), None


def _error_line(header: Mapping[str, Any]) -> str:
    """What Python prints for an error that came without a traceback."""
    return f"{header['ename']}: {header['evalue']}" if header["evalue"] else str(header["ename"])


def _chosen_mime(data: Mapping[str, Any]) -> str | None:
    """The MIME to show: the first of the precedence list, else the first MIME present."""
    for mime in MIME_PRECEDENCE:
        if mime in data:
            return mime
    return next(iter(sorted(data)), None)


def _is_json_mime(mime: str) -> bool:
    return mime == "application/json" or mime.endswith("+json")


def _decoded(value: Any) -> bytes:
    """Base64 image data as nbformat stores it (a string, or a list of lines)."""
    return base64.b64decode("".join(_text(value).split()), validate=True)


def _text_block(header: dict[str, Any], text: str, fence: str, ref: str, max_text: int) -> str:
    """A fenced text output, cut to ``max_text`` characters with a note of what is left."""
    if len(text) <= max_text:
        return _block("@@output", header, _fenced(text, fence))
    rest = len(text) - max_text
    header = {**header, "chars": len(text), "ref": ref}
    note = f"… {rest} more characters: read {ref}"
    return _block("@@output", header, _fenced(text[:max_text], fence) + "\n" + note)


def _block(kind: str, header: Mapping[str, Any], body: str) -> str:
    head = f"{kind} {_compact(header)}"
    return f"{head}\n{body}" if body else head


def _fenced(text: str, language: str) -> str:
    """``text`` in a backtick fence longer than any backtick run inside it."""
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    content = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{language}\n{content}{fence}"


def _escape_header_lines(text: str) -> str:
    """Markdown or raw text whose lines cannot be taken for ``@@`` headers (see module doc)."""
    return _HEADER_LIKE_LINE.sub(r"\\\1", text)


def _plain(text: str) -> str:
    """Terminal text without ANSI colours and links (IPython colours tracebacks)."""
    return _ANSI_ESCAPE.sub("", text)


def _text(value: Any) -> str:
    """nbformat multiline text: a string, or a list of strings to concatenate."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return json.dumps(value, ensure_ascii=False)


def _compact(header: Mapping[str, Any]) -> str:
    return json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _join(blocks: list[str]) -> str:
    return "\n\n".join(blocks) + "\n"
