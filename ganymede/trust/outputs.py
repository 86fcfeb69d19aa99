"""Fingerprints of rich outputs, alike for a kernel's iopub message and the notebook output a
frontend makes of it, and the server's memory of the ones its kernels produced.

A frontend that runs a cell over the kernel websocket writes the outputs into the room itself
(JupyterLab does: ``{...content, output_type}`` for each ``display_data`` and
``execute_result``, and an ``update_display_data`` replaces the data of the outputs showing
its display id). The room cannot tell those outputs from ones a client made up, unless the
server remembers what its kernels sent: a rich output a client writes is trusted only if a
kernel of this server produced its data (or the room trusted it already).

Only rich outputs need this: nbformat trusts a cell whose outputs are streams, errors and
outputs without data whoever wrote them (``needs_trust``), so streams and errors are not
fingerprinted. The fingerprint covers an output's mime bundle, its ``data``, which is all a
frontend renders HTML and scripts from, normalised as the document reads it back: each text
mime's lines joined (nbformat's multiline strings), numbers as a JavaScript frontend keeps them
(whole numbers as ints, any beyond 2**53 rounded through a double) and keys sorted. It is a
SHA-256 digest cut to 128 bits, not a fast non-cryptographic hash: a client chooses what it
writes, so it must not be able to find data of its own with the fingerprint of a kernel's.

Pure logic, no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

RICH_OUTPUT_TYPES = frozenset({"execute_result", "display_data"})
"""The outputs nbformat's notary asks trust of (when they carry data)."""
RICH_MESSAGE_TYPES = RICH_OUTPUT_TYPES | {"update_display_data"}
"""The iopub messages a frontend turns into such outputs (an update's data replaces theirs)."""
DEFAULT_REMEMBERED = 16_384
"""How many fingerprints the server keeps: about 2 MB, the most recent rich outputs."""
SAFE_INTEGER = 2**53
"""Whole numbers beyond this lose digits in a JavaScript frontend, which writes them back so."""

Fingerprint = bytes


def bundle_fingerprint(data: Mapping[str, Any]) -> Fingerprint:
    """The fingerprint of a mime bundle, as a kernel sends it or a notebook holds it.

    Each mime and its value go in with their lengths, so no two bundles run together alike:
    a text value as it is, a JSON value as canonical JSON text, each marked which it is."""
    digest = hashlib.sha256()
    for mime in sorted(data):
        value = data[mime]
        if isinstance(value, list) and not _is_json_mime(mime):
            value = "".join(value)
        kind, text = (b"s", value) if isinstance(value, str) else (b"j", _canonical_json(value))
        for piece in (_utf8(mime), kind + _utf8(text)):
            digest.update(len(piece).to_bytes(8, "little"))
            digest.update(piece)
    return digest.digest()[:16]


def message_fingerprint(msg_type: str, content: Mapping[str, Any]) -> Fingerprint | None:
    """The fingerprint of the output a frontend makes of an iopub message (None: not rich)."""
    data = content.get("data")
    if msg_type not in RICH_MESSAGE_TYPES or not isinstance(data, Mapping):
        return None
    return bundle_fingerprint(data)


def output_fingerprint(output: Any) -> Fingerprint | None:
    """The fingerprint of a notebook output's data (None: not a rich output)."""
    if not isinstance(output, Mapping) or output.get("output_type") not in RICH_OUTPUT_TYPES:
        return None
    data = output.get("data")
    return bundle_fingerprint(data) if isinstance(data, Mapping) else None


def rich_fingerprints(outputs: list[Any]) -> list[Fingerprint]:
    """The fingerprints of a cell's rich outputs, in order."""
    found = (output_fingerprint(output) for output in outputs)
    return [fingerprint for fingerprint in found if fingerprint is not None]


class KernelOutputs:
    """The fingerprints of the rich outputs the server's kernels sent their clients lately.

    Bounded: the ``limit`` most recently sent are kept (one sent again counts as recent), so a
    kernel drawing plots in a loop costs at most the bound. Not forgotten when a kernel shuts
    down: its last outputs may still be on their way into a room, which judges them when it
    saves.
    """

    def __init__(self, limit: int = DEFAULT_REMEMBERED) -> None:
        self.limit = limit
        self._recent: OrderedDict[Fingerprint, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._recent)

    def __contains__(self, fingerprint: object) -> bool:
        return fingerprint in self._recent

    def add(self, fingerprint: Fingerprint) -> None:
        self._recent[fingerprint] = None
        self._recent.move_to_end(fingerprint)
        if len(self._recent) > self.limit:
            self._recent.popitem(last=False)

    def saw(self, msg_type: str, content: Mapping[str, Any]) -> None:
        """A kernel sent this iopub message to a client: remember its output, if rich."""
        fingerprint = message_fingerprint(msg_type, content)
        if fingerprint is not None:
            self.add(fingerprint)


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, as a kernel or a client may send
        return text.encode("utf-8", "surrogatepass")


def _canonical_json(value: Any) -> str:
    """Keys sorted, numbers as the document reads them back (``_float``, ``_int``)."""
    normalised = json.loads(json.dumps(value), parse_float=_float, parse_int=_int)
    return json.dumps(normalised, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _is_json_mime(mime: str) -> bool:
    """nbformat keeps these as JSON values; other mimes' lists are lines of one string."""
    return mime == "application/json" or mime.endswith("+json")


def _float(token: str) -> float | int:
    number = float(token)
    return int(number) if number.is_integer() else number


def _int(digits: str) -> int | str:
    number = int(digits)
    if -SAFE_INTEGER <= number <= SAFE_INTEGER:
        return number
    try:
        return int(float(number))
    except OverflowError:  # beyond a double: the document holds its digits (``live_value``)
        return digits
