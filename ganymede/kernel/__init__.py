"""Helpers a notebook calls from inside its kernel: parameters in, named results out, and the
host API (``host()``) for asking the server about other notebooks.

This module runs in kernels, which may live in an environment without Ganymede's server
dependencies, so at import time it needs only the standard library (and the stdlib-only results
reader whose MIME type it writes); IPython is imported when a result is published (it is always
there in an IPython kernel), and the host client when ``host()`` is first called.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from ganymede.notebook.results import RESULT_MIME

PARAMS_VARIABLE = "GANYMEDE_PARAMS"
_PLAIN_TEXT_LIMIT = 200

if TYPE_CHECKING:
    from ganymede.kernel.client import Host, HostError

__all__ = ["PARAMS_VARIABLE", "RESULT_MIME", "Host", "HostError", "host", "params", "result"]


def host(timeout: float = 2.0) -> Host | None:
    """The server's host API for this kernel, or None when no Ganymede server answers.

    ``h.notebooks.list/read/search/results/run``, ``h.self.add/edit/delete``, ``h.has(method)``,
    ``h.notebook``; ``await h.acall(method, **params)`` and the ``a``-prefixed variants in async
    cells. A failed call raises ``HostError`` (``.code``, ``.message``).
    """
    from ganymede.kernel.client import host as connect

    return connect(timeout)


def __getattr__(name: str) -> Any:
    if name in ("Host", "HostError"):
        from ganymede.kernel import client

        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def params() -> dict[str, Any]:
    """The parameters the runner launched this kernel with; ``{}`` when it was launched without.

    Parameters travel as one JSON object in the environment, so they reach every kernel language
    the same way and need no injected cell.
    """
    text = os.environ.get(PARAMS_VARIABLE)
    if text is None or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{PARAMS_VARIABLE} is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        kind = type(value).__name__
        raise ValueError(f"{PARAMS_VARIABLE} must hold a JSON object, not a JSON {kind}: {text!r}")
    return value


def result(name: str, value: Any) -> None:
    """Publish ``value`` as the named result ``name`` of this run (the last one of a name wins).

    The value is sent as JSON and read back as JSON, so what the caller gets is exactly what a
    JSON round trip gives (tuples become lists); anything JSON cannot hold is refused here, where
    the notebook author can fix it, rather than failing later in whoever reads the results.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"a result name must be a non-empty string, not {name!r}")
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"result {name!r}: the value must be JSON (str, int, float, bool, None, "
            f"and lists or dicts with str keys of those): {error}"
        ) from None
    from IPython.display import display

    payload = {"name": name, "value": json.loads(text)}
    display({RESULT_MIME: payload, "text/plain": _plain_text(name, text)}, raw=True)


def _plain_text(name: str, text: str) -> str:
    """A one-line stand-in for frontends that don't render the result MIME type."""
    if len(text) > _PLAIN_TEXT_LIMIT:
        text = text[: _PLAIN_TEXT_LIMIT - 1] + "…"
    return f"result {name}: {text}"
