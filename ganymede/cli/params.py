"""Turning ``-p``/``-P``/``-f`` flags into one parameters object (SPEC §2).

``-p NAME=VALUE`` takes VALUE as a JSON literal when it is one (``3``, ``1.5``, ``true``, ``null``,
``[1,2]``, ``{"a":1}``) and as a string otherwise (``2nd``), which is what users of papermill's
``-p`` asked for. ``-P`` always keeps a string. Files (``-f``, JSON or TOML) apply first, then the
flags in the order they were given, so a later flag wins.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from ganymede.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_FLAGS = {"-p": "json", "--param": "json", "-P": "string", "--param-string": "string"}


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def typed_value(text: str) -> Any:
    """A ``-p`` value: the JSON literal it spells, else the text itself (NaN/Infinity stay text)."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return text


def split_assignment(flag: str, text: str) -> tuple[str, str]:
    """``NAME=VALUE`` → ``(NAME, VALUE)``, or a UsageError that says what was expected."""
    name, equals, value = text.partition("=")
    if not equals:
        raise UsageError(f"{flag} expects NAME=VALUE, got {text!r}")
    if not _NAME.match(name):
        raise UsageError(f"{flag} {text!r}: {name!r} is not a valid parameter name")
    return name, value


def load_params_file(path: Path) -> dict[str, Any]:
    """The parameters object in a ``.json`` or ``.toml`` file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"-f {path}: cannot read: {error.strerror or error}") from None
    try:
        if path.suffix == ".json":
            data = json.loads(text)
        elif path.suffix == ".toml":
            data = tomllib.loads(text)
        else:
            raise UsageError(f"-f {path}: expected a .json or .toml file")
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as error:
        raise UsageError(f"-f {path}: not valid {path.suffix[1:].upper()}: {error}") from None
    if not isinstance(data, dict):
        raise UsageError(f"-f {path}: expected an object of parameters")
    return data


def flags_in_order(argv: list[str]) -> list[tuple[str, str]]:
    """The ``-p``/``-P`` flags of a command line as ``(flag, NAME=VALUE)``, in the order given.

    click hands each option's values over separately; the order across the two options is only
    in the command line itself.
    """
    found: list[tuple[str, str]] = []
    tokens = iter(argv)
    for token in tokens:
        if token == "--":
            break
        if token in _FLAGS:
            value = next(tokens, None)
            if value is not None:
                found.append((token, value))
        elif token.startswith(("--param=", "--param-string=")):
            flag, _, value = token.partition("=")
            found.append((flag, value))
        elif token[:2] in ("-p", "-P") and len(token) > 2 and not token.startswith("--"):
            found.append((token[:2], token[2:]))
    return found


def build_params(files: list[Path], flags: list[tuple[str, str]]) -> dict[str, Any]:
    """Files first, then each flag in order; later ones win."""
    params: dict[str, Any] = {}
    for path in files:
        params.update(load_params_file(path))
    for flag, text in flags:
        name, value = split_assignment(flag, text)
        params[name] = typed_value(value) if _FLAGS[flag] == "json" else value
    return params
