"""JupyterLab's Document Timeline slider (jupyter-collaboration-ui) on Ganymede's history."""

from __future__ import annotations

from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell
from playwright.sync_api import Browser, expect

from tests.browser.conftest import OpenLab, stop_within_deadline
from tests.browser.lab import (
    LabPage,
    expect_source,
    sources_on_disk,
    wait_for_disk,
    write_notebook,
)
from tests.serve.conftest import RunningServer, jupyter_env, start_server

pytestmark = pytest.mark.slow


def test_dragging_the_slider_back_shows_the_earlier_version_and_restore_saves_it(
    served: RunningServer, lab_page: OpenLab
) -> None:
    path = write_notebook(served.root / "timeline.ipynb", new_code_cell("a = 1"))
    lab = lab_page("timeline.ipynb")
    editor = lab.cell_editor(0)
    lab.type_at_end(editor, " # one")
    wait_for_disk(path, sources_on_disk, ["a = 1 # one"])
    lab.type_at_end(editor, " # two")
    wait_for_disk(path, sources_on_disk, ["a = 1 # one # two"])

    lab.page.locator('[title="Document Timeline"]').click()
    slider = lab.page.locator("input.jp-Slider")
    expect(slider).to_be_visible()
    assert int(slider.get_attribute("max") or "0") >= 2, lab.diagnostics()
    slider.fill("0")  # all the way back: the notebook as the room loaded it

    expect_source(editor, "a = 1")
    assert sources_on_disk(path) == ["a = 1 # one # two"]  # only this tab looks back
    lab.page.locator(".jp-restoreBtn").click()
    expect(lab.page.get_by_text("Document restored successfully")).to_be_visible()

    wait_for_disk(path, sources_on_disk, ["a = 1"])
    expect(lab.cells).to_have_count(1)
    expect_source(editor, "a = 1")
    # Back on the room: typing goes to the file again.
    lab.type_at_end(editor, " # three")
    wait_for_disk(path, sources_on_disk, ["a = 1 # three"])


def test_the_slider_still_reaches_back_after_a_server_restart(
    browser: Browser, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    path = write_notebook(root / "kept.ipynb", new_code_cell("a = 1"))
    env = jupyter_env(tmp_path / "jupyter")
    first = start_server(root, env)
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        lab = LabPage.record(context, first, "kept.ipynb").open()
        lab.type_at_end(lab.cell_editor(0), " # before the restart")
        wait_for_disk(path, sources_on_disk, ["a = 1 # before the restart"])
        context.close()
    finally:
        stop_within_deadline(first)
    second = start_server(root, env)
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        lab = LabPage.record(context, second, "kept.ipynb").open()
        lab.page.locator('[title="Document Timeline"]').click()
        slider = lab.page.locator("input.jp-Slider")
        expect(slider).to_be_visible()
        # The first server's load and edit, and this server's load at least.
        assert int(slider.get_attribute("max") or "0") >= 2, lab.diagnostics()
        slider.fill("0")
        expect_source(lab.cell_editor(0), "a = 1")
        lab.page.locator(".jp-restoreBtn").click()
        wait_for_disk(path, sources_on_disk, ["a = 1"])
        context.close()
    finally:
        stop_within_deadline(second)
