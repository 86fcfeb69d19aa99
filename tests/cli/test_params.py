"""``-p``/``-P``/``-f`` parsing: JSON typing, strings kept, files first, later flags win."""

from __future__ import annotations

from pathlib import Path

import pytest

from ganymede.cli.params import build_params, flags_in_order, typed_value
from ganymede.errors import UsageError


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3", 3),
        ("1.5", 1.5),
        ("1e3", 1000.0),
        ("true", True),
        ("null", None),
        ("[1,2]", [1, 2]),
        ('{"a":1}', {"a": 1}),
        ('"quoted"', "quoted"),
        ("2nd", "2nd"),
        ("True", "True"),
        ("007", "007"),
        ("", ""),
        ("NaN", "NaN"),
        ("Infinity", "Infinity"),
        ("a=b", "a=b"),
    ],
)
def test_values_are_json_literals_else_strings(text: str, value: object) -> None:
    assert typed_value(text) == value
    assert type(typed_value(text)) is type(value)


def test_flags_keep_command_line_order_across_options() -> None:
    argv = ["nb.ipynb", "-p", "n=1", "-Pn=one", "--param=m=2", "--param-string", "k=3", "-j", "2"]
    assert flags_in_order(argv) == [("-p", "n=1"), ("-P", "n=one"), ("--param", "m=2"),
                                    ("--param-string", "k=3")]  # fmt: skip
    assert build_params([], flags_in_order(argv)) == {"n": "one", "m": 2, "k": "3"}


def test_files_apply_first_then_flags(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"n": 1, "counter": "x", "nested": {"k": [1]}}')
    (tmp_path / "b.toml").write_text('n = 2\nwhen = "today"\n')
    params = build_params([tmp_path / "a.json", tmp_path / "b.toml"], [("-p", "counter=2nd")])
    assert params == {"n": 2, "counter": "2nd", "nested": {"k": [1]}, "when": "today"}


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        (("-p", "counter"), "-p expects NAME=VALUE, got 'counter'"),
        (("-p", "=3"), "-p '=3': '' is not a valid parameter name"),
        (("-P", "2x=3"), "-P '2x=3': '2x' is not a valid parameter name"),
        (("-p", "a b=3"), "-p 'a b=3': 'a b' is not a valid parameter name"),
    ],
)
def test_bad_flags_say_what_was_expected(flag: tuple[str, str], message: str) -> None:
    with pytest.raises(UsageError) as raised:
        build_params([], [flag])
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("p.json", "[1, 2]", "expected an object of parameters"),
        ("p.json", "{bad", "not valid JSON"),
        ("p.toml", "n = ", "not valid TOML"),
        ("p.yaml", "n: 1", "expected a .json or .toml file"),
    ],
)
def test_bad_params_files_are_refused(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(UsageError, match=message):
        build_params([path], [])


def test_a_missing_params_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read"):
        build_params([tmp_path / "none.json"], [])
