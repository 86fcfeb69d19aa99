"""Turning ``-p``/``-P``/``-r``/``-y``/``-b``/``-f`` flags into one parameters object (SPEC §2).

The typing rule for ``-p`` values gives papermill users what papermill gives them and keeps JSON
literals, in this order: ``True``/``False``/``None`` are those constants; a JSON literal is its
value (``true``, ``null``, ``3``, ``1.5``, ``[1,2]``, ``{"a":1}``, ``"quoted"``); a number as
Python spells it is that number (``007`` → 7, ``1_000`` → 1000, ``.5`` → 0.5); anything else
stays a string (``2nd``). ``nan`` and ``inf`` stay strings: parameters are JSON data.
``-P``/``-r`` always keep a string.

Both spellings of a flag work: ``-p NAME=VALUE`` and papermill's ``-p NAME VALUE``. Files
(``-f``: JSON, TOML or YAML) apply first, then the flags (``-y`` YAML text and ``-b`` base64 YAML
among them) in the order they were given, so a later flag wins.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import tomllib
from pathlib import Path
from typing import Any

from ganymede.errors import UsageError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ASSIGNMENTS = {
    "-p": "typed",
    "--param": "typed",
    "-P": "string",
    "-r": "string",
    "--param-string": "string",
}
_DOCUMENTS = {"-y": "yaml", "--params-yaml": "yaml", "-b": "base64", "--params-base64": "base64"}
_FLAGS = {**_ASSIGNMENTS, **_DOCUMENTS}
_PYTHON_CONSTANTS: dict[str, Any] = {"True": True, "False": False, "None": None}
_YAML_SUFFIXES = (".yaml", ".yml")


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def typed_value(text: str) -> Any:
    """A ``-p`` value under the typing rule in this module's docstring."""
    if text in _PYTHON_CONSTANTS:
        return _PYTHON_CONSTANTS[text]
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        value = _python_number(text)
    if isinstance(value, float) and not math.isfinite(value):
        return text  # 1e400 or inf: no JSON number holds it
    return value


def _python_number(text: str) -> Any:
    """``int(text)``, else ``float(text)``, else the text: papermill's reading of a value."""
    for number in (int, float):
        try:
            return number(text)
        except ValueError:
            continue
    return text


def joined_assignments(argv: list[str]) -> list[str]:
    """``argv`` with papermill's two-word ``-p NAME VALUE`` (and ``-P``/``-r``) made one word.

    A word after the flag that holds no ``=`` is a NAME, so the word after it is its VALUE
    (whatever it looks like: ``-p out x.ipynb`` gives ``out``, not a notebook); a word with
    ``=`` is ``NAME=VALUE`` already. Joining before click parses keeps VALUE from being taken
    for a notebook and keeps ``-o``'s value where it was.
    """
    joined: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            return joined + argv[index:]
        if token in _ASSIGNMENTS and index + 2 < len(argv) and "=" not in argv[index + 1]:
            joined += [token, f"{argv[index + 1]}={argv[index + 2]}"]
            index += 3
            continue
        if token in _FLAGS and index + 1 < len(argv):
            joined += [token, argv[index + 1]]  # a value, never a flag of its own
            index += 2
            continue
        joined.append(token)
        index += 1
    return joined


def split_assignment(flag: str, text: str) -> tuple[str, str]:
    """``NAME=VALUE`` → ``(NAME, VALUE)``, or a UsageError that says what was expected."""
    name, equals, value = text.partition("=")
    if not equals:
        raise UsageError(f"{flag} expects NAME=VALUE or NAME VALUE, got {text!r} alone")
    if not _NAME.match(name):
        raise UsageError(f"{flag} {text!r}: {name!r} is not a valid parameter name")
    return name, value


def yaml_params(text: str, source: str) -> dict[str, Any]:
    """The parameters object a YAML document spells; ``source`` names it in errors."""
    try:
        import yaml
    except ImportError:  # pragma: no cover - pyyaml is a dependency; a broken install lacks it
        raise UsageError(f"{source}: reading YAML needs PyYAML (pip install pyyaml)") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise UsageError(f"{source}: not valid YAML: {_one_line(str(error))}") from None
    return _params_object(data if data is not None else {}, source)


def base64_params(text: str, source: str) -> dict[str, Any]:
    """The parameters object in base64-encoded YAML (papermill's ``-b``)."""
    try:
        decoded = base64.b64decode(text.encode("ascii"), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeError):
        raise UsageError(f"{source}: not base64-encoded UTF-8 text") from None
    return yaml_params(decoded, source)


def load_params_file(path: Path) -> dict[str, Any]:
    """The parameters object in a ``.json``, ``.toml``, ``.yaml`` or ``.yml`` file."""
    source = f"-f {path}"
    if path.suffix not in (".json", ".toml", *_YAML_SUFFIXES):
        raise UsageError(f"{source}: expected a .json, .toml, .yaml or .yml file")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"{source}: cannot read: {error.strerror or error}") from None
    if path.suffix in _YAML_SUFFIXES:
        return yaml_params(text, source)
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as error:
        raise UsageError(f"{source}: not valid {path.suffix[1:].upper()}: {error}") from None
    return _params_object(data, source)


def _params_object(data: Any, source: str) -> dict[str, Any]:
    """``data`` if it is an object of JSON data; YAML and TOML can spell dates and such too."""
    if not isinstance(data, dict):
        raise UsageError(f"{source}: expected an object of parameters")
    try:
        json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise UsageError(f"{source}: parameters must be JSON data: {error}") from None
    return data


def _one_line(text: str) -> str:
    return " ".join(text.split())


def flags_in_order(argv: list[str]) -> list[tuple[str, str]]:
    """The parameter flags of a command line as ``(flag, value)``, in the order given.

    click hands each option's values over separately; the order across options is only in the
    command line itself. ``argv`` has its two-word assignments joined already.
    """
    found: list[tuple[str, str]] = []
    tokens = iter(argv)
    long_attached = tuple(f"{flag}=" for flag in _FLAGS if flag.startswith("--"))
    for token in tokens:
        if token == "--":
            break
        if token in _FLAGS:
            value = next(tokens, None)
            if value is not None:
                found.append((token, value))
        elif token.startswith(long_attached):
            flag, _, value = token.partition("=")
            found.append((flag, value))
        elif token[:2] in _FLAGS and len(token) > 2:
            found.append((token[:2], token[2:]))
    return found


def build_params(files: list[Path], flags: list[tuple[str, str]]) -> dict[str, Any]:
    """Files first, then each flag in order; later ones win."""
    params: dict[str, Any] = {}
    for path in files:
        params.update(load_params_file(path))
    for flag, text in flags:
        kind = _FLAGS[flag]
        if kind == "yaml":
            params.update(yaml_params(text, flag))
        elif kind == "base64":
            params.update(base64_params(text, flag))
        else:
            name, value = split_assignment(flag, text)
            params[name] = typed_value(value) if kind == "typed" else value
    return params
