"""JupyterLab itself, with the unchanged docprovider, editing through rooms (headless Chromium).

Skipped where Playwright or Debian's ``chromium`` is missing.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.serve.conftest import RunningServer
from tests.serve.rooms.client import eventually
from tests.serve.rooms.conftest import notebook_bytes, sources_on_disk, write

playwright = pytest.importorskip("playwright.async_api")
CHROMIUM = shutil.which("chromium")
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium"),
    pytest.mark.slow,
]

CELL_EDITOR = ".jp-Notebook .jp-Cell .cm-content"
LOAD_TIMEOUT_MS = 60_000


@pytest.fixture
async def page() -> AsyncIterator[Any]:
    async with playwright.async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield await browser.new_page()
        finally:
            await browser.close()


async def dismiss_kernel_choice(page: Any) -> None:
    """A notebook without a kernelspec asks for a kernel first; this test needs none."""
    dialog = await page.wait_for_selector(".jp-Dialog", timeout=LOAD_TIMEOUT_MS)
    assert "Select Kernel" in await dialog.inner_text()
    await page.keyboard.press("Escape")
    await page.wait_for_selector(".jp-Dialog", state="detached")


async def test_jupyterlab_opens_edits_and_saves_a_notebook_through_its_room(
    server: RunningServer, page: Any
) -> None:
    path: Path = write(server.root / "lab" / "nb.ipynb", notebook_bytes("a = 1"))
    await page.goto(f"{server.base}lab/tree/lab/nb.ipynb?token={server.token}")
    await page.wait_for_selector(CELL_EDITOR, timeout=LOAD_TIMEOUT_MS)
    await dismiss_kernel_choice(page)
    assert await page.inner_text(CELL_EDITOR) == "a = 1"

    await page.click(CELL_EDITOR)
    await page.keyboard.press("End")
    # After the autosave the frontend fetches the file's model and adopts the room's new hash.
    adopted = page.expect_response(
        lambda response: (
            "api/contents/lab/nb.ipynb?content=0" in response.url and "hash=1" not in response.url
        )
    )
    async with adopted:
        await page.keyboard.type("  # typed in JupyterLab")
        await eventually(
            lambda: sources_on_disk(path) == ["a = 1  # typed in JupyterLab"], "the autosave"
        )
    await page.wait_for_selector(".jp-mod-current.jp-mod-dirty", state="detached")

    assert await page.query_selector("text=Saving completed") is None
    await page.keyboard.press("Control+s")
    await page.wait_for_selector("text=Saving completed", timeout=LOAD_TIMEOUT_MS)
    assert await page.query_selector(".jp-Dialog") is None, "no 'File Changed' dialog"
