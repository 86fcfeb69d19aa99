"""Reading a call's params: each method names what it takes, and anything else fails clearly.

A kernel client may send ``null`` for an optional param it was not given, so ``None`` counts as
absent. Every refusal is a ``failed`` HostCallError naming the method and the param.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ganymede.errors import HostCallError


class Params:
    """One call's params, checked against the names its method accepts."""

    def __init__(self, method: str, params: Any, accepted: tuple[str, ...]) -> None:
        if not isinstance(params, Mapping):
            raise self._failure(method, f"params must be an object, not {type(params).__name__}")
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            takes = ", ".join(accepted) or "no params"
            raise self._failure(method, f"unknown param {unknown[0]!r} (takes {takes})")
        self.method = method
        self._params = params

    def text(self, name: str, default: str | None = None) -> str:
        """A string param; required when ``default`` is None."""
        value = self._params.get(name)
        if value is None:
            if default is None:
                raise self._failure(self.method, f"{name} is required")
            return default
        if not isinstance(value, str):
            raise self._failure(self.method, f"{name} must be a string, not {_kind(value)}")
        return value

    def optional_text(self, name: str) -> str | None:
        value = self._params.get(name)
        if value is not None and not isinstance(value, str):
            raise self._failure(self.method, f"{name} must be a string, not {_kind(value)}")
        return value

    def flag(self, name: str, default: bool) -> bool:
        value = self._params.get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._failure(self.method, f"{name} must be true or false, not {_kind(value)}")
        return value

    def integer(self, name: str, default: int) -> int:
        value = self._params.get(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._failure(self.method, f"{name} must be an integer, not {_kind(value)}")
        return value

    def seconds(self, name: str) -> float | None:
        """A positive, finite number of seconds, or None when absent."""
        value = self._params.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._failure(self.method, f"{name} must be a number, not {_kind(value)}")
        if not math.isfinite(value) or value <= 0:
            raise self._failure(self.method, f"{name} must be a positive number of seconds")
        return float(value)

    def mapping(self, name: str) -> dict[str, Any]:
        """An object param; ``{}`` when absent."""
        value = self._params.get(name)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self._failure(self.method, f"{name} must be an object, not {_kind(value)}")
        return dict(value)

    def raw(self, name: str) -> Any:
        return self._params.get(name)

    def fail(self, message: str) -> HostCallError:
        """A ``failed`` error about this call, for checks the method makes itself."""
        return self._failure(self.method, message)

    @staticmethod
    def _failure(method: str, message: str) -> HostCallError:
        return HostCallError("failed", f"{method}: {message}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
