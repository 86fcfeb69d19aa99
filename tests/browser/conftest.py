"""JupyterLab itself, in Debian's headless Chromium, against a real ``ganymede serve``.

Playwright drives the system browser (its own download is never used) through the driver its pip
package ships. Each launch gets a fresh temporary profile from Playwright, and each page its own
browser context, so no cookie, storage or JupyterLab workspace leaks from one page to the next.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Playwright, sync_playwright

from tests.browser.lab import AnyLabPage, LabPage
from tests.serve.conftest import RunningServer, jupyter_env, start_server

CHROMIUM = Path("/usr/bin/chromium")
# Root has no user namespaces for Chromium's sandbox; the rest keeps a headless run quiet and
# off the network (this machine reaches only package registries).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# A server stops in about a second; one still running long after Ctrl-C is hung.
SERVER_STOP_TIMEOUT_S = 20
OPENED_PAGES = pytest.StashKey[list[LabPage]]()

OpenLab = Callable[[str], LabPage]


def require_chromium() -> None:
    """Skip only where nothing could have installed the browser: not root, so no ``make`` apt step.

    As root the Makefile installs Debian's ``chromium``; a missing browser there is a broken setup
    and fails loudly instead of silently skipping every browser test.
    """
    if CHROMIUM.exists():
        return
    if os.geteuid() != 0:
        pytest.skip(f"{CHROMIUM} is missing (Debian's chromium; `make test` as root installs it)")
    pytest.fail(f"{CHROMIUM} is missing although `make test` as root installs Debian's chromium")


@pytest.fixture(scope="module")
def playwright_driver() -> Iterator[Playwright]:
    """Playwright's sync driver, for one test module at a time.

    Between its calls the driver leaves its event loop marked as this thread's running loop, so
    while it lives no asyncio test can run its own: a session-wide driver would break every
    async test collected after the browser tests.
    """
    require_chromium()
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright_driver: Playwright) -> Iterator[Browser]:
    chromium = playwright_driver.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
    )
    yield chromium
    chromium.close()


def empty_root(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """An empty root for one test's server; a test parametrizing the server's fixture
    (indirectly) gives the text of the root's ``ganymede.toml``."""
    root = tmp_path / "root"
    root.mkdir()
    config = getattr(request, "param", None)
    if config is not None:
        (root / "ganymede.toml").write_text(config)
    return root


@pytest.fixture
def served(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    """``ganymede serve <root> --no-browser --port 0``: one server, one empty root per test."""
    running = start_server(empty_root(tmp_path, request), jupyter_env(tmp_path / "jupyter"))
    yield running
    stop_within_deadline(running)


def stop_within_deadline(server: RunningServer) -> None:
    """Ctrl-C, and a failure naming the hang if the server is still there after the deadline.

    A server that ignores Ctrl-C is killed so it cannot outlive the test run.
    """
    assert server.process.stdout is not None
    server.process.send_signal(signal.SIGINT)
    try:
        server.process.wait(timeout=SERVER_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()
        log_tail = "\n".join(server.log.read_text(errors="replace").splitlines()[-30:])
        pytest.fail(
            f"ganymede serve was still running {SERVER_STOP_TIMEOUT_S} s after Ctrl-C "
            f"(killed); its log ends:\n{log_tail}"
        )
    finally:
        server.process.stdout.close()


@pytest.fixture
def lab_page(
    request: pytest.FixtureRequest, browser: Browser, served: RunningServer
) -> Iterator[OpenLab]:
    """Opens a file of the served root in JupyterLab, each call in a browser context of its own.

    The returned page has shown the document's content from its room. A failing test's report
    carries each page's console errors, failed requests and the server's log.
    """
    with opened_pages(request, browser, served, LabPage) as open_lab:
        yield open_lab


@contextlib.contextmanager
def opened_pages(
    request: pytest.FixtureRequest,
    browser: Browser,
    server: RunningServer,
    frontend: type[AnyLabPage],
) -> Iterator[Callable[[str], AnyLabPage]]:
    """Opens files of ``server``'s root in ``frontend``'s page, each in a browser context of its
    own, recorded for the failure report; the contexts close when the test is done."""
    contexts: list[BrowserContext] = []
    pages: list[LabPage] = []
    request.node.stash[OPENED_PAGES] = pages

    def open_page(path: str) -> AnyLabPage:
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        contexts.append(context)
        page = frontend.record(context, server, path)
        pages.append(page)
        page.open()
        return page

    yield open_page
    for context in contexts:
        context.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        for index, lab in enumerate(item.stash.get(OPENED_PAGES, [])):
            title = f"{type(lab).__name__} {index} on {lab.path}"
            report.sections.append((title, lab.diagnostics()))
    return report
