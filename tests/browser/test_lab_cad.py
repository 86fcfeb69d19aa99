"""A JupyterCAD model (.jcad) in JupyterCAD's own JupyterLab frontend, in a room of Ganymede's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import OpenLab
from tests.serve.conftest import RunningServer

pytestmark = pytest.mark.slow

AT_ORIGIN = {"Position": [0.0, 0.0, 0.0], "Axis": [0.0, 0.0, 1.0], "Angle": 0.0}


def cad_object(name: str, shape: str, **parameters: float) -> dict[str, Any]:
    """One object as JupyterCAD's schema (jcad.json) has it: a named shape and its parameters."""
    return {
        "name": name,
        "shape": shape,
        "visible": True,
        "parameters": {**parameters, "Color": "#808080", "Placement": AT_ORIGIN},
    }


def write_model(path: Path, *objects: dict[str, Any]) -> None:
    content = {"schemaVersion": "3.0.0", "objects": list(objects), "options": {}, "metadata": {}}
    path.write_text(json.dumps(content, indent=2))


def test_a_cad_model_shows_its_objects_and_another_programs_change_to_its_file(
    served: RunningServer, lab_page: OpenLab
) -> None:
    path = served.root / "bracket.jcad"
    plinth = cad_object("plinth", "Part::Box", Length=4.0, Width=4.0, Height=1.0)
    ball = cad_object("ball", "Part::Sphere", Radius=1.0, Angle1=-90.0, Angle2=90.0, Angle3=360.0)
    write_model(path, plinth, ball)
    lab = lab_page("bracket.jcad")  # open once the object tree lists plinth and ball

    session = lab.session_reply()
    assert (session["format"], session["type"]) == ("text", "jcad")
    sockets = lab.room_websockets(f"text:jcad:{session['fileId']}")
    assert sockets and not sockets[-1].is_closed(), lab.diagnostics()

    # Another program renames the sphere and adds a cylinder, starting from the file as it is
    # now (the room may have saved what JupyterCAD added to it on opening).
    content = json.loads(path.read_text())
    for obj in content["objects"]:
        if obj["name"] == "ball":
            obj["name"] = "globe"
    post = cad_object("post", "Part::Cylinder", Radius=0.5, Height=3.0, Angle=360.0)
    content["objects"].append(post)
    path.write_text(json.dumps(content, indent=2))

    expect(lab.cad_objects).to_have_text(["plinth", "globe", "post"])
    assert not sockets[-1].is_closed(), lab.diagnostics()
