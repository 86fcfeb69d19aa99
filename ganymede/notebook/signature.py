"""A notebook's signature digest, the one nbformat's notary computes, from parsed JSON data.

``jupyter trust``, jupyter_server and Ganymede must agree on a notebook's signature, since they
share one database of trusted digests. nbformat computes it as an HMAC over every key and value
of the notebook (its top-level ``metadata.signature`` left out), keys sorted, each piece encoded
as UTF-8 and fed to the HMAC one by one: strings as they are, anything else as ``str()`` gives
it. It walks a ``NotebookNode`` copy of the notebook and makes one call per piece.

The digest is the same whether the pieces go in one by one or joined, so here they are joined
first and hashed in one call, straight from the dicts and lists a parse gave: on a notebook of a
few thousand cells that is a few milliseconds instead of a copy and a hundred thousand calls,
and a room checks the signature of every version of its file it opens or takes in.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any


def signature_digest(notebook: Mapping[str, Any], secret: bytes, algorithm: str) -> str:
    """The hex digest nbformat's ``NotebookNotary.compute_signature`` gives ``notebook``.

    ``algorithm`` is a hashlib name (the notary's ``algorithm``, ``sha256`` by default).
    ``notebook`` is not changed.
    """
    pieces: list[str] = []
    for key in sorted(notebook):
        pieces.append(key)
        value = notebook[key]
        if key == "metadata" and isinstance(value, Mapping) and "signature" in value:
            value = {name: item for name, item in value.items() if name != "signature"}
        _flatten(value, pieces)
    text = "".join(pieces).encode("utf-8")
    return hmac.new(secret, text, getattr(hashlib, algorithm)).hexdigest()


def _flatten(value: Any, pieces: list[str]) -> None:
    if isinstance(value, str):
        pieces.append(value)
    elif isinstance(value, dict):
        for key in sorted(value):
            pieces.append(key)
            _flatten(value[key], pieces)
    elif isinstance(value, list | tuple):
        for item in value:
            _flatten(item, pieces)
    else:
        pieces.append(str(value))
