"""The pure half of search: queries, excerpts, output text, and the raw-bytes pre-test."""

from __future__ import annotations

import json

import pytest

from ganymede.core.search import EXCERPT_WIDTH, Query, excerpt, outputs_text
from ganymede.errors import UsageError


def test_query_is_lowered_and_whitespace_collapsed() -> None:
    query = Query.parse("  Weekday \t\n DROP ")
    assert query.key == "weekday drop"
    assert query.longest_word == "weekday"


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_an_empty_query_is_refused(text: str) -> None:
    with pytest.raises(UsageError, match="empty"):
        Query.parse(text)


def test_a_query_must_be_a_string() -> None:
    with pytest.raises(UsageError, match="string"):
        Query.parse(3)  # type: ignore[arg-type]


def test_matches_within_one_line_with_whitespace_collapsed() -> None:
    query = Query.parse("weekday drop")
    assert query.excerpt_in("x\n    the  Weekday\tDrop here\ny") == "the Weekday Drop here"
    assert query.excerpt_in("weekday\ndrop") is None
    assert query.excerpt_in("weekdays drop") is None


def test_the_first_matching_line_gives_the_excerpt() -> None:
    assert Query.parse("x").excerpt_in("a\nfirst x\nsecond x") == "first x"


def test_unicode_matching() -> None:
    assert Query.parse("ÉTÉ").excerpt_in("un été chaud") == "un été chaud"
    assert Query.parse("k").excerpt_in("\u212a") == "\u212a"  # KELVIN SIGN lowers to "k"


def test_short_lines_are_whole() -> None:
    assert excerpt("short line", 0, 5) == "short line"


def test_long_lines_are_centred_on_the_match() -> None:
    line = "a" * 300 + "NEEDLE" + "b" * 300
    cut = excerpt(line, 300, 6)
    assert cut.startswith("…")
    assert cut.endswith("…")
    assert len(cut) == EXCERPT_WIDTH + 2
    assert "NEEDLE" in cut
    middle = cut.index("NEEDLE") + 3
    assert abs(middle - len(cut) / 2) <= 2


def test_a_match_near_an_end_is_not_padded_there() -> None:
    line = "NEEDLE" + "b" * 300
    head = excerpt(line, 0, 6)
    assert head.startswith("NEEDLE")
    assert head.endswith("…")
    assert len(head) == EXCERPT_WIDTH + 1
    tail = excerpt("a" * 300 + "NEEDLE", 300, 6)
    assert tail.startswith("…")
    assert tail.endswith("NEEDLE")


def test_outputs_text_takes_streams_text_markdown_and_errors() -> None:
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": ["one\n", "two\n"]},
        {"output_type": "execute_result", "data": {"text/plain": "3", "image/png": "iVBOR"}},
        {"output_type": "display_data", "data": {"text/markdown": "**four**"}},
        {"output_type": "error", "ename": "KeyError", "evalue": "'five'", "traceback": ["tb"]},
        {"output_type": "display_data", "data": {"text/html": "<b>six</b>"}},
        "not an output",
    ]
    assert outputs_text(outputs) == "one\ntwo\n\n3\n**four**\nKeyError: 'five'"  # type: ignore[arg-type]


SOURCES = [
    'print("quoted")',
    "path/to/file",
    "back\\slash",
    "tab\there",
    "été à Paris",
    "\u212aelvin",
    "İstanbul",
    "ΟΔΟΣ",
    "emoji 📓 here",
]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_the_raw_pre_test_never_misses_a_match(source: str, ensure_ascii: bool) -> None:
    raw = json.dumps({"cells": [{"source": source}]}, ensure_ascii=ensure_ascii).encode()
    lowered_words = {word for word in source.lower().split()} | {source.lower()}
    for text in [*lowered_words, source, source.upper()]:
        query = Query.parse(text)
        if query.excerpt_in(source) is not None:
            assert query.may_occur_in(raw), (text, raw)


@pytest.mark.parametrize(("source", "query"), [("\u212a", "k"), ("\u0130", "i")])
def test_the_raw_pre_test_sees_non_ascii_letters_that_lower_into_ascii(
    source: str, query: str
) -> None:
    raw = json.dumps({"cells": [{"source": source}]}, ensure_ascii=False).encode()
    assert query.encode() not in raw.lower()
    assert Query.parse(query).excerpt_in(source) is not None
    assert Query.parse(query).may_occur_in(raw)


def test_the_raw_pre_test_rules_out_files_without_the_words() -> None:
    raw = json.dumps({"cells": [{"source": "nothing to see"}]}).encode()
    assert not Query.parse("weekday drop").may_occur_in(raw)
    assert Query.parse("nothing").may_occur_in(raw)


def test_escaped_control_characters_do_not_defeat_the_pre_test() -> None:
    traceback = json.dumps({"traceback": ["\x1b[0;31mValueError\x1b[0m"]}).encode()
    assert b"\\u001b" in traceback
    assert not Query.parse("weekday").may_occur_in(traceback)
    assert Query.parse("valueerror").may_occur_in(traceback)
