"""Parameter flags: the typing rule, both spellings, YAML, strings kept, files first, later wins."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from ganymede.cli.params import build_params, flags_in_order, joined_assignments, typed_value
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
        ("True", True),
        ("False", False),
        ("None", None),
        ("007", 7),
        ("1_000", 1000),
        (".5", 0.5),
        ("-3", -3),
        ("", ""),
        ("NaN", "NaN"),
        ("nan", "nan"),
        ("inf", "inf"),
        ("Infinity", "Infinity"),
        ("1e400", "1e400"),
        ("a=b", "a=b"),
        ("hello world", "hello world"),
    ],
)
def test_values_are_python_constants_json_literals_numbers_else_strings(
    text: str, value: object
) -> None:
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
        (("-p", "counter"), "-p expects NAME=VALUE or NAME VALUE, got 'counter' alone"),
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
        ("p.yml", "n: [1", "not valid YAML"),
        ("p.yaml", "- 1", "expected an object of parameters"),
        ("p.yaml", "when: 2024-01-01", "parameters must be JSON data"),
        ("p.ini", "n = 1", "expected a .json, .toml, .yaml or .yml file"),
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


@pytest.mark.parametrize(
    ("argv", "joined"),
    [
        (["execute", "nb.ipynb", "-p", "n", "3"], ["execute", "nb.ipynb", "-p", "n=3"]),
        (["execute", "-p", "n=3", "nb.ipynb"], ["execute", "-p", "n=3", "nb.ipynb"]),
        (["execute", "-p", "out", "x.ipynb", "nb.ipynb"],
         ["execute", "-p", "out=x.ipynb", "nb.ipynb"]),
        (["execute", "-p", "eq", "a=b", "nb.ipynb"], ["execute", "-p", "eq=a=b", "nb.ipynb"]),
        (["execute", "-r", "s", "007", "-P", "t", "x"], ["execute", "-r", "s=007", "-P", "t=x"]),
        (["execute", "nb.ipynb", "-o", "out.ipynb", "-p", "n", "3"],
         ["execute", "nb.ipynb", "-o", "out.ipynb", "-p", "n=3"]),
        (["execute", "-y", "n: 1", "-p", "m", "2"], ["execute", "-y", "n: 1", "-p", "m=2"]),
        (["execute", "-p", "x", "-p", "nb.ipynb"], ["execute", "-p", "x=-p", "nb.ipynb"]),
        (["execute", "nb.ipynb", "-p", "n"], ["execute", "nb.ipynb", "-p", "n"]),
        (["execute", "--", "-p", "n", "3"], ["execute", "--", "-p", "n", "3"]),
    ],
)  # fmt: skip
def test_papermills_two_word_assignments_become_one_word(
    argv: list[str], joined: list[str]
) -> None:
    assert joined_assignments(argv) == joined


def test_yaml_text_base64_and_files_merge_in_order(tmp_path: Path) -> None:
    (tmp_path / "base.yml").write_text("n: 1\nlabel: base\nflags: [a, b]\n")
    encoded = base64.b64encode(b"n: 2\nextra: {k: v}\n").decode()
    argv = ["-y", "label: yaml\nratio: 0.5", "-b", encoded, "-p", "n", "3"]
    params = build_params([tmp_path / "base.yml"], flags_in_order(joined_assignments(argv)))
    assert params == {
        "n": 3,
        "label": "yaml",
        "flags": ["a", "b"],
        "ratio": 0.5,
        "extra": {"k": "v"},
    }


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        (("-b", "not base64!"), "-b: not base64-encoded UTF-8 text"),
        (("-y", "[1, 2]"), "-y: expected an object of parameters"),
        (("-y", "a: [1"), "-y: not valid YAML"),
        (("-y", "a: .nan"), "-y: parameters must be JSON data"),
    ],
)
def test_bad_yaml_flags_are_refused(flag: tuple[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        build_params([], [flag])


def test_empty_yaml_is_no_parameters() -> None:
    assert build_params([], [("-y", "")]) == {}
