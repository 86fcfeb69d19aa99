"""The security sweep, short: every route of a real server refuses a missing and a wrong token
(but those jupyter_server leaves open on purpose), every generated path escape is refused by
every door that takes a path (a sample through the ``ganymede grant`` CLI), nothing outside the
root changes, and only a person's ``@agent`` cell is ever reported as a request."""

from __future__ import annotations

from pathlib import Path

import pytest

from stress.security import DELIBERATELY_OPEN, Layout, concrete_url, escapes, run

pytestmark = pytest.mark.slow


@pytest.mark.timeout(600)  # one server, ~1,000 checks: minutes on a busy 2-core machine
def test_the_sweep_finds_no_failure(tmp_path: Path) -> None:
    sweep = run(tmp_path, cli_sample=2)
    assert sweep.failures == []
    assert sweep.endpoints > 60
    assert {"host responder", "grants API", "agent API", "file id API", "contents API"} <= set(
        sweep.doors
    )
    assert sweep.doors["requests"] == 6
    opened = {entry.rsplit("(", 1)[1].rstrip(")") for entry in sweep.open_on_purpose}
    assert opened <= set(DELIBERATELY_OPEN)


def test_the_escapes_cover_every_kind(tmp_path: Path) -> None:
    found = escapes(Layout.make(tmp_path))
    kinds = {escape.kind for escape in found}
    assert kinds == {
        "dotdot",
        "absolute",
        "tilde",
        "symlink",
        "encoded",
        "backslash",
        "nul",
        "near-miss",
        "trailing",
        "lookalike",
    }
    assert {escape.leaves for escape in found} == {"root", "grant"}


def test_urls_are_made_from_route_patterns() -> None:
    samples = ["0e1f-2a-3b-4c-5d", "/x.ipynb", "restart"]
    kernel = r"/api/kernels/(?P<kernel_id>\w+-\w+-\w+-\w+-\w+)/(?P<action>restart|interrupt)$"
    assert concrete_url(kernel, samples) == "/api/kernels/0e1f-2a-3b-4c-5d/restart"
    contents = r"/api/contents(?P<path>(?:(?:/[^/]+)+|/?))/checkpoints$"
    assert concrete_url(contents, samples) == "/api/contents/x.ipynb/checkpoints"
    assert concrete_url(r"/api/kernels/(\d+)$", samples) is None
