"""The entry point's start-up: what ``ganymede``'s own processes leave out of jsonschema."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from ganymede.cli.launch import skip_the_iri_grammar
{skip}
import jsonschema, nbformat
checkers = set(jsonschema.FormatChecker.checkers)
nbformat.validate(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]))
print(sorted({{"iri", "iri-reference", "uri", "email"}} & checkers))
print(bool(sys.modules.get("lark")))
"""


def checkers_and_parser(skip: bool) -> list[str]:
    code = PROBE.format(skip="skip_the_iri_grammar()" if skip else "")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_launcher_leaves_out_only_the_iri_checker_and_its_parser() -> None:
    assert checkers_and_parser(skip=False) == [
        "['email', 'iri', 'iri-reference', 'uri']",
        "True",
    ]
    assert checkers_and_parser(skip=True) == ["['email', 'uri']", "False"]
